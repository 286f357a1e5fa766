/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The zonecast command: dispatches to its subcommands (cli/cmd_*.c).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"

static void usage(FILE *out)
{
	fputs("Usage: zonecast COMMAND [OPTIONS]\n"
	      "\n"
	      "An authoritative DNS server whose record changes propagate in\n"
	      "milliseconds.\n"
	      "\n"
	      "Commands:\n"
	      "  serve     run the DNS server (and the builder) on a data dir\n"
	      "  status    the running server: listeners, lag, queues, caches\n"
	      "  reload    re-read the configuration (as SIGHUP does)\n"
	      "  stop      stop the running server\n"
	      "  check-config  check a configuration without starting\n"
	      "  zone      import, export, list, delete, check, status of zones\n"
	      "  verify    compare the edge store with the records store\n"
	      "  migrate   move the records store to PostgreSQL or back to SQLite\n"
	      "  token     create API tokens\n"
	      "  tsig      create, list and delete TSIG keys (UPDATE, transfers)\n"
	      "  secondaries  a zone's own notify targets and allow-transfer\n"
	      "  dnssec    sign zones online: enable, disable, ds, keys\n"
	      "  record    list, add, edit and remove records through the API\n"
	      "  edge      run an edge server of a fleet (fed through NATS)\n"
	      "  fleet     the fleet's edges and their lag; store digests\n"
	      "  version   print the version\n"
	      "\n"
	      "Run 'zonecast COMMAND --help' for a command's options.\n", out);
}

int main(int argc, char **argv)
{
	/* Data files (records, edge store, tokens, keys) are the owner's
	 * alone. */
	umask(077);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "serve") == 0) {
		return cmd_serve(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "zone") == 0) {
		return cmd_zone(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "record") == 0) {
		return cmd_record(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "token") == 0) {
		return cmd_token(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "dnssec") == 0) {
		return cmd_dnssec(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "tsig") == 0) {
		return cmd_tsig(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "secondaries") == 0) {
		return cmd_secondaries(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "edge") == 0) {
		return cmd_edge(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "fleet") == 0) {
		return cmd_fleet(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "verify") == 0) {
		return cmd_verify(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "migrate") == 0) {
		return cmd_migrate(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "status") == 0 || strcmp(cmd, "reload") == 0 ||
	    strcmp(cmd, "stop") == 0) {
		return cmd_control(cmd, argc - 1, argv + 1);
	}
	if (strcmp(cmd, "check-config") == 0) {
		return cmd_check_config(argc - 1, argv + 1);
	}
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("zonecast %s\n", ZONECAST_VERSION);
		return 0;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
	    strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "zonecast: unknown command '%s'\n\n", cmd);
	usage(stderr);
	return 2;
}
