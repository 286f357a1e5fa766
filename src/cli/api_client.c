/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A minimal HTTP/1.1 client for the zonecast API (one request per
 * connection), used by the CLI's record commands.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/api_client.h"
#include "common/error.h"
#include "common/net.h"

static int send_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n <= 0) {
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return ZC_EOK;
}

int cli_api_request(const char *addr, const char *token, const char *method,
                    const char *path, const char *body, json_t **out)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	*out = NULL;
	if (zc_addr_parse(addr, &ss, &sslen) != ZC_EOK) {
		fprintf(stderr, "zonecast: invalid API address '%s'\n", addr);
		return ZC_EUSAGE;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sslen) != 0) {
		fprintf(stderr, "zonecast: cannot reach the API at %s: %s\n", addr,
		        strerror(errno));
		if (fd >= 0) {
			close(fd);
		}
		return -ECONNREFUSED;
	}
	size_t blen = body ? strlen(body) : 0;
	char head[2048];
	int hlen = snprintf(head, sizeof(head), "%s /client/v4%s HTTP/1.1\r\n"
	                    "Host: %s\r\nAuthorization: Bearer %s\r\n"
	                    "Content-Type: application/json\r\n"
	                    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	                    method, path, addr, token, blen);
	int ret = send_all(fd, head, (size_t)hlen);
	if (ret == ZC_EOK && blen > 0) {
		ret = send_all(fd, body, blen);
	}
	char *resp = NULL;
	size_t len = 0, cap = 0;
	while (ret == ZC_EOK) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			char *grown = realloc(resp, cap);
			if (grown == NULL) {
				ret = -ENOMEM;
				break;
			}
			resp = grown;
		}
		ssize_t n = recv(fd, resp + len, cap - len - 1, 0);
		if (n <= 0) {
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	int status = -EPROTO;
	if (ret == ZC_EOK && resp != NULL) {
		resp[len] = '\0';
		char *bodyp = strstr(resp, "\r\n\r\n");
		if (sscanf(resp, "HTTP/1.%*d %d", &status) == 1 && bodyp != NULL) {
			*out = json_loads(bodyp + 4, 0, NULL);
		}
	}
	free(resp);
	return ret == ZC_EOK ? status : ret;
}

void cli_api_print_errors(const json_t *resp, int status)
{
	json_t *errors = json_object_get(resp, "errors");
	size_t i;
	json_t *e;
	if (json_array_size(errors) == 0) {
		fprintf(stderr, "zonecast: API error (HTTP %d)\n", status);
	}
	json_array_foreach(errors, i, e) {
		fprintf(stderr, "zonecast: %s (HTTP %d)\n",
		        json_string_value(json_object_get(e, "message")), status);
	}
}
