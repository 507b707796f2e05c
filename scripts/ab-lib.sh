# Shared by server-ab.sh, client-ab.sh and build-ab.sh (sourced). Each
# defines run NAME SIDE FLAGS, which appends "<scenario> <side> <JSON>" to
# $out. The two sides are $ab_a and $ab_b (lifenet and raw unless set);
# ratios are a/b.

# ab_init [ROUNDS] [SECONDS] [REGEX]: the arguments (3 rounds of 4 s, every
# scenario) and a fresh build of the CLI in $bin.
ab_init() {
  rounds=${1:-3} seconds=${2:-4} only=${3:-.}
  bin=$(mktemp -d)/lifenet
  go build -o "$bin" ./cmd/lifenet
}

# ab_rounds ROUNDS REGEX SCENARIO...: every scenario whose name matches,
# lifenet and raw in turn, the order alternating from round to round so
# that drift in the machine's load favours neither.
ab_rounds() {
  local rounds=$1 only=$2 r sc name impl
  shift 2
  for ((r = 1; r <= rounds; r++)); do
    local order=("${ab_a:-lifenet}" "${ab_b:-raw}")
    ((r % 2 == 0)) && order=("${ab_b:-raw}" "${ab_a:-lifenet}")
    for sc in "$@"; do
      name=${sc%%|*}
      [[ $name =~ $only ]] || continue
      for impl in "${order[@]}"; do run "$name" "$impl" "${sc#*|}"; done
    done
  done
}

# ab_summary FILE RATE-FIELD CPU-FIELD WHOSE: pairs the i-th $ab_a run of a
# scenario with its i-th $ab_b run and prints the medians of the rate and
# CPU ratios, and of each side's bytes allocated per message.
ab_summary() {
  awk -v rf="$2" -v cf="$3" -v who="$4" -v sa="${ab_a:-lifenet}" -v sb="${ab_b:-raw}" '
    function field(k,   m) { return match($0, "\"" k "\":[0-9.e+-]+") ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 : 0 }
    function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
      return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
    }
    { k = $1 SUBSEP $2; i = ++cnt[k]; rate[k, i] = field(rf); cpu[k, i] = field(cf); alloc[k, i] = field("allocPerMsg"); if (!($1 in seen)) { seen[$1] = 1; names[++ns] = $1 } }
    END {
      printf "\n%-17s %6s  %22s  %22s  %14s  %6s\n", "scenario", "rounds", "rate " sa "/" sb, who " CPU/msg " sa "/" sb, "B/msg " sa, sb
      for (s = 1; s <= ns; s++) {
        name = names[s]; n = cnt[name, sa] < cnt[name, sb] ? cnt[name, sa] : cnt[name, sb]
        for (i = 1; i <= n; i++) {
          t[i] = rate[name, sa, i] / rate[name, sb, i]; c[i] = cpu[name, sa, i] / cpu[name, sb, i]
          al[i] = alloc[name, sa, i]; ar[i] = alloc[name, sb, i]
        }
        printf "%-17s %6d  %22.3f  %22.3f  %14.2f  %6.2f\n", name, n, median(t, n), median(c, n), median(al, n), median(ar, n)
      }
    }' "$1"
}
