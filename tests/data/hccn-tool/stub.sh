#!/bin/sh
# Recording player standing in for hccn_tool (and for ping) inside the fixture sysroots.
#   stub.sh REC -i N -QUERY -g              print REC/N/QUERY.txt (exit status REC/N/QUERY.rc if present)
#   stub.sh REC -i N -ping -g address IP    reply as reachable when IP is a line of REC/reachable
#   stub.sh REC ping -c K -W S IP           host ping, same REC/reachable list
# A query with no recording prints "no recording" on stderr and exits 2 (so it is never mistaken for output).
rec=$1; shift
reach() { grep -qx "$1" "$rec/reachable" 2>/dev/null; }
if [ "$1" = "ping" ]; then
  for ip; do :; done
  if reach "$ip"; then echo "3 packets transmitted, 3 received, 0% packet loss, time 2003ms"; exit 0; fi
  echo "3 packets transmitted, 0 received, 100% packet loss, time 2040ms"; exit 1
fi
[ "$1" = "-i" ] || { echo "hccn_tool stub: expected -i N, got '$*'" >&2; exit 2; }
dev=$2; query=${3#-}
if [ "$query" = "ping" ]; then
  ip=$6
  if reach "$ip"; then echo "3 packets transmitted, 3 received, 0.00% packet loss"; exit 0; fi
  echo "3 packets transmitted, 0 received, 100.00% packet loss"; exit 1
fi
f="$rec/$dev/$query.txt"
[ -f "$f" ] || { echo "hccn_tool stub: no recording for -i $dev -$query" >&2; exit 2; }
cat "$f"
[ -f "$rec/$dev/$query.rc" ] && exit "$(cat "$rec/$dev/$query.rc")"
exit 0
