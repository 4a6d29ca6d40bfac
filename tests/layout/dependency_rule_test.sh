#!/usr/bin/env bash
# The dependency rule, checked on the includes: pure-logic folders never include
# CAF, and sched/'s rooms include one way only (splitrpc -> serving -> placement,
# colocation -> serving); a violation is printed with its file and line.
#   usage: dependency_rule_test.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 1
bad=0
report() { echo "$1"; bad=1; }
for dir in core config graph embedding sched nn gpu; do
  while IFS= read -r hit; do report "pure logic includes CAF: $hit"; done \
    < <(grep -rn --include='*.hpp' --include='*.cpp' --include='*.cu' '#include [<"]caf/' "$dir")
done
# room: the rooms it must not include
declare -A forbidden=(
  [placement]="serving colocation splitrpc"
  [serving]="colocation splitrpc"
  [splitrpc]="colocation"
  [colocation]="splitrpc"
)
for room in "${!forbidden[@]}"; do
  for other in ${forbidden[$room]}; do
    while IFS= read -r hit; do report "sched/$room must not include sched/$other: $hit"; done \
      < <(grep -rn --include='*.hpp' --include='*.cpp' "#include \"sched/$other/" "sched/$room")
  done
done
# Every file of sched/ lives in a room.
while IFS= read -r f; do report "sched/ file outside the rooms: $f"; done \
  < <(find sched -maxdepth 1 -type f ! -name CMakeLists.txt)
[ "$bad" = 0 ] && echo "dependency rule holds"
exit "$bad"
