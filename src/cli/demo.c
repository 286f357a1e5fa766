/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The demo zone a fresh `zonecast serve` seeds into an empty data dir. */
#include "cli/commands.h"

const char cli_demo_zone_name[] = "example.test.";

const char cli_demo_zone_text[] =
	"$ORIGIN example.test.\n"
	"$TTL 300\n"
	"@        3600 IN SOA ns1 hostmaster 1 7200 900 1209600 300\n"
	"@             IN NS  ns1\n"
	"@             IN NS  ns2\n"
	"@             IN A   192.0.2.1\n"
	"@             IN AAAA 2001:db8::1\n"
	"@             IN MX  10 mail\n"
	"@             IN TXT \"v=spf1 mx -all\"\n"
	"@             IN CAA 0 issue \"letsencrypt.org\"\n"
	"ns1           IN A   192.0.2.53\n"
	"ns2           IN A   192.0.2.54\n"
	"mail          IN A   192.0.2.25\n"
	"www           IN CNAME @\n"
	"*.apps        IN A   192.0.2.80\n"
	"_sip._tcp     IN SRV 10 60 5060 sip\n"
	"sip           IN A   192.0.2.60\n"
	"shop          IN HTTPS 1 . alpn=h2,h3\n"
	"delegated     IN NS  ns.delegated\n"
	"ns.delegated  IN A   192.0.2.99\n";
