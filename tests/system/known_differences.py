"""Deliberate differences between zonecast and knotd in the differential test.

Each entry waives matching differences found by test_differential.py. Keys:
  qname     regular expression, full match against the lowercased QNAME text
  qtype     QTYPE mnemonic ("ANY", "DS", ...) or None for every type
  field     compared field ("rcode", "flags", "answer", "authority",
            "additional", "counts", "edns", "qname_case", "response") or None
  transport "udp", "tcp" or None
  reason    why zonecast deliberately differs; MUST cite an RFC ("RFC nnnn ...")
Example:
  {"qname": r".*", "qtype": "ANY", "field": "answer", "transport": None,
   "reason": "RFC 8482 section 4.2: zonecast answers ANY with a synthesized HINFO"},
"""

KNOWN_DIFFERENCES = [
    {"qname": r"(?:[^.]+\.){4,}dloop\.example\.com\.", "qtype": None,
     "field": "answer", "transport": None,
     "reason": "RFC 6672 section 2.2: when the DNAME substitution would "
               "exceed 255 octets the answer is YXDOMAIN with the DNAME "
               "only; knotd 3.2 goes on to follow the DNAME target itself "
               "and adds unrelated CNAMEs (a knotd bug), zonecast does not"},
]
