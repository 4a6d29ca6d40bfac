#!/usr/bin/env bash
# The dependency rule, checked on the includes: pure-logic folders never include
# CAF, and the engine's folders include one way only (splitrpc -> serving ->
# features, colocation -> serving; hps stands alone). Also folder = namespace: a
# file in folder X declares only namespaces spindle::X (or below; core/ is spindle itself), and no file
# declares an inline namespace. A violation is printed with its file and line.
#   usage: dependency_rule_test.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 1
bad=0
report() { echo "$1"; bad=1; }
sources() { grep -rn --include='*.hpp' --include='*.cpp' --include='*.cu' --include='*.cuh' "$@"; }
# CAF lives in three folders only: actors/ (the actors), runtime/ (what starts and
# links actor systems: serving stacks, cluster membership, placement sync) and
# apps/ (the commands). Pure logic and the transports never include it.
for dir in core config graph features hps serving colocation splitrpc nn gpu transport client; do
  while IFS= read -r hit; do report "$dir/ includes CAF (only actors/, runtime/, apps/ may): $hit"; done \
    < <(sources '#include [<"]caf/' "$dir")
done
# folder: the folders it must not include
declare -A forbidden=(
  [features]="serving colocation splitrpc hps client actors runtime apps transport"
  [hps]="features serving colocation splitrpc client actors runtime apps transport"
  [serving]="colocation splitrpc hps client actors runtime apps transport"
  [splitrpc]="colocation hps client actors runtime apps"
  [colocation]="splitrpc hps client actors runtime apps transport"
  [client]="actors runtime apps"
)
for dir in "${!forbidden[@]}"; do
  for other in ${forbidden[$dir]}; do
    while IFS= read -r hit; do report "$dir/ must not include $other/: $hit"; done \
      < <(sources "#include \"$other/" "$dir")
  done
done
# folder = namespace; core/ is spindle's own namespace (the vocabulary every folder uses)
while IFS= read -r hit; do report "core/ declares a folder's namespace: $hit"; done \
  < <(sources -E '^namespace spindle::[a-z_]+' core | grep -vE ':namespace spindle::(log|detail)( |\{|$)')
for dir in config graph features hps serving colocation splitrpc nn gpu client actors runtime apps transport; do
  while IFS= read -r hit; do report "inline namespace: $hit"; done \
    < <(sources -E '^\s*(inline namespace|namespace [a-z_:]*inline )' "$dir")
  while IFS= read -r hit; do report "namespace is not its folder's (spindle::$dir): $hit"; done \
    < <(sources -E '^namespace spindle(::[a-z_]+)*( |\{|$)' "$dir" | grep -vE ":namespace spindle::$dir(::[a-z_:]+)?( |\{|$)")
done
[ "$bad" = 0 ] && echo "dependency rule holds"
exit "$bad"
