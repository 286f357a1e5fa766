/* SPDX-License-Identifier: GPL-3.0-or-later */
/* An empty program: meson.build links each library of src/ whole into it
 * with only the folders and libraries that library declares, so that a
 * dependency between folders that its meson.build does not declare fails
 * the build. */
int main(void)
{
	return 0;
}
