#!/bin/sh
# test_hostile.sh - run test_hostile against a private mcpd, then check the
# NIC survived.  Bounded: 60 s.
set -u
. "$(dirname "$0")/with-nic.sh"
with_nic hostile "" ./test_hostile
