# audit_guest.sh - `scratchstat audit`'s cases in the two-node guest,
# sourced by the guest script of tests/locality/guest_locality.test after
# its own cases, in the same boot (THP is "never" by then). Needs SS (scratchstat),
# SHIM (the preload library), HOST (host_numa), TOOL (host_locality_tool),
# HAUDIT (host_audit),
# JQ, USER (setpriv to nobody), PARANOID, SITE (host_numa.c:LINE of its
# malloc). Prints the text audit of the split case for docs/audit.md.
#  - launch mode, as root: a main thread on node 0 allocates 64 MiB, a
#    worker on each node writes a half; the audit's bytes per node, per
#    thread and for the call site equal move_pages' count inside the host;
#  - sampling refused (perf_event_paranoid 3, nobody): the first-touch
#    tier is off with its reason, placement and lease still give the same
#    bytes and a "placement measured" finding;
#  - attach mode on an untouched buffer: nothing becomes present, RSS and
#    placement are the same before and after;
#  - a block written on node 0 and freed by a thread on node 1: "Block
#    reused by a thread on another node", use by lease, with its bytes;
#  - a thread that first touched a block on node 0 and moved to node 1:
#    "Thread moved node", with the bytes it left behind.
export SCRATCH_RUNTIME_DIR=/tmp/run-root
j() { $JQ -r "$1" "$2"; }
pages() { kv "$1" "$(line "^$2 " "$3")"; }

# split NAME WRAPPER...: an audit of host_numa split 64 under WRAPPER.
split() {
  name=$1
  shift
  "$@" timeout 120 $SS audit --json --preload $SHIM -- \
    sh -c "exec $HOST split 64 --nohuge >$name.host" >$name.json 2>$name.err
  st=$?
  cat $name.host $name.err
  check "audit $name: the command's exit status" eq "$st" 0
  pid=$(j .pid $name.json)
  w0=$(sed -n 's/^writer first tid=\([0-9]*\).*/\1/p' $name.host)
  w1=$(sed -n 's/^writer second tid=\([0-9]*\).*/\1/p' $name.host)
  on0=$((($(pages node0 first $name.host) + $(pages node0 second $name.host)) * 4096))
  on1=$((($(pages node1 first $name.host) + $(pages node1 second $name.host)) * 4096))
  half=$((32 << 20))
  echo "ground truth: node0=$on0 node1=$on1 main=$pid writers=$w0,$w1"
  echo "audit: $($JQ -c '{samples, present_bytes, sampled_bytes, unknown_bytes, placement_reads}' $name.json)"
  check "audit $name: two nodes" eq "$(j '[(.nodes | length), .single_node] | join(" ")' $name.json)" "2 false"
  check "audit $name: present bytes as move_pages counted them" \
    eq "$(j .present_bytes $name.json)" $((on0 + on1))
  check "audit $name: placement x user matrix: node 0 and node 1 rows, main's node 0" \
    eq "$(j '.matrix.placement | map(join(",")) | join(" ")' $name.json)" "$on0,0,0 $on1,0,0 0,0,0"
  check "audit $name: main on node 0 uses it all, its remote bytes are node 1's" \
    eq "$(j ".threads[] | select(.tid == $pid) | [.node, .used_bytes, .remote_bytes] | join(\" \")" $name.json)" \
    "0 $((on0 + on1)) $on1"
}

echo "case audit split"
split split
check "audit split: every tier on" eq "$(j '[.tiers[].on] | all' split.json)" true
check "audit split: no sample lost" eq "$(j .samples.lost split.json)" 0
check "audit split: first touch x user matrix as the kernel placed them" \
  eq "$(j '.matrix.first_touch | map(join(",")) | join(" ")' split.json)" "$on0,0,0 $on1,0,0 0,0,0"
check "audit split: every present byte has a sampled first toucher" \
  eq "$(j '[.sampled_bytes, .unknown_bytes] | join(" ")' split.json)" "$((on0 + on1)) 0"
check "audit split: writer 0 on node 0 first touched a half, for another thread" \
  eq "$(j ".threads[] | select(.tid == $w0) | [.node, .first_touched_bytes, .touched_for_others_bytes, .remote_bytes] | join(\" \")" split.json)" \
  "0 $half $half 0"
check "audit split: writer 1 on node 1 first touched the other half, for another thread" \
  eq "$(j ".threads[] | select(.tid == $w1) | [.node, .first_touched_bytes, .touched_for_others_bytes, .remote_bytes] | join(\" \")" split.json)" \
  "1 $half $half 0"
check "audit split: the first finding is the call site's cross-node bytes" \
  eq "$(j '.findings[0] | [.kind, .evidence, .site, .owner, .bytes, .risk] | join(" ")' split.json)" \
  "cross_touch first touch sampled $SITE $pid $on1 false"
check "audit split: it names both writers" \
  eq "$(j '.findings[0].tids | sort | join(" ")' split.json)" "$(printf '%s\n' $w0 $w1 | sort -n | tr '\n' ' ' | sed 's/ $//')"
check "audit split: the sentence" \
  grep -q "Buffer allocated by $pid (host_numa) at $SITE, pages first touched by" split.json
check "audit split: the block's runs are the halves with their writers" \
  eq "$(j '.blocks[0].runs | map(select(.present) | "\(.node):\(.toucher):\(.bytes)") | join(" ")' split.json)" \
  "0:$w0:$half 1:$w1:$half"
timeout 120 $SS audit --preload $SHIM -- sh -c "exec $HOST split 64 --nohuge >/dev/null" >split.txt 2>&1
echo "text audit:"
cat split.txt
check "audit split: the table shows the finding" grep -q "first touch sampled  Buffer allocated by" split.txt

echo "case audit refused"
echo 3 >$PARANOID
mkdir -p /tmp/run-nobody && chown 65534:65534 /tmp/run-nobody && chmod 700 /tmp/run-nobody
SCRATCH_RUNTIME_DIR=/tmp/run-nobody
split refused $USER
SCRATCH_RUNTIME_DIR=/tmp/run-root
check "audit refused: the first-touch tier is off, with the reason" \
  eq "$(j '.tiers.first_touch | [.on, .reason] | join(" ")' refused.json)" \
  "false perf_event_paranoid is 3: software page-fault sampling needs <= 2 or CAP_PERFMON"
check "audit refused: placement and use stay on" \
  eq "$(j '[.tiers.placement.on, .tiers.use.on] | join(" ")' refused.json)" "true true"
check "audit refused: no first toucher is guessed" \
  eq "$(j '.matrix.first_touch | map(join(",")) | join(" ")' refused.json)" "0,0,0 0,0,0 $((on0 + on1)),0,0"
check "audit refused: a placement-measured finding with the cross-node bytes" \
  eq "$(j '.findings[0] | [.kind, .evidence, .site, .bytes] | join(" ")' refused.json)" \
  "cross_touch placement measured $SITE $on1"

echo "case audit untouched"
LD_PRELOAD=$SHIM timeout 120 $HOST untouched 64 --hold >unt.host &
hp=$!
waitfor unt.host ready
first=$(sed -n 's/^buffer first=\([^ ]*\) .*/\1/p' unt.host)
end=$(sed -n 's/^buffer .* end=\([^ ]*\)$/\1/p' unt.host)
rss0=$(grep RssAnon /proc/$hp/status)
timeout 60 $TOOL placement $hp $first $((end - first)) >unt.before
timeout 60 $SS audit --json --for 2 $hp >unt.json 2>unt.err
st=$?
timeout 60 $TOOL placement $hp $first $((end - first)) >unt.after
rss1=$(grep RssAnon /proc/$hp/status)
kill -TERM $hp
wait $hp
cat unt.err
echo "rss before: $rss0 after: $rss1"
check "audit untouched: attach mode exits 0" eq "$st" 0
check "audit untouched: the block is there, nothing of it present" \
  eq "$(j "[.blocks[] | select(.start == $((first))) | .present_bytes] | join(\" \")" unt.json)" 0
check "audit untouched: placement was read more than once" [ "$(j .placement_reads unt.json)" -ge 2 ]
check "audit untouched: every page absent before and after" \
  eq "$(kv absent "$(line '^pages' unt.before)") $(kv absent "$(line '^pages' unt.after)")" \
  "$(((end - first) / 4096)) $(((end - first) / 4096))"
check "audit untouched: RSS unchanged" eq "$rss0" "$rss1"
check "audit untouched: attach mode says first touches before it are unknown" \
  grep -q 'first touches before the attach are unknown' unt.json

echo "case audit remote free"
LD_PRELOAD=$SHIM timeout 120 $HAUDIT remote 16 >rf.host &
hp=$!
waitfor rf.host ready
freer=$(sed -n 's/.* freer=\([0-9]*\).*/\1/p' rf.host)
timeout 60 $SS audit --json --for 1 $hp >rf.json 2>rf.err
st=$?
kill -TERM $hp
wait $hp
cat rf.host rf.err
check "audit remote free: exit 0" eq "$st" 0
check "audit remote free: the freer on node 1 reused a block whose pages are on node 0" \
  eq "$(j '.findings[0] | [.kind, .evidence, .risk, .bytes, .node, .other_node, (.tids | join(","))] | join(" ")' rf.json)" \
  "reused_remote use by lease false $((16 << 20)) 0 1 $freer"
check "audit remote free: the freer's remote bytes" \
  eq "$(j ".threads[] | select(.tid == $freer) | [.node, .remote_bytes] | join(\" \")" rf.json)" "1 $((16 << 20))"

echo "case audit thread moved"
timeout 120 $SS audit --json --preload $SHIM -- sh -c "exec $HAUDIT moved 16 >mv.host" >mv.json 2>mv.err
st=$?
cat mv.host mv.err
pid=$(j .pid mv.json)
check "audit thread moved: exit 0, on CPU 1 at the end" eq "$st $(sed -n 's/.* moved cpu=//p' mv.host)" "0 1"
check "audit thread moved: the finding, with the bytes left on node 0" \
  eq "$(j '[.findings[] | select(.kind == "thread_moved") | .evidence, .owner, .node, .bytes] | join(" ")' mv.json)" \
  "first touch sampled $pid 1 $((16 << 20))"
check "audit thread moved: now on node 1, its own block remote" \
  eq "$(j ".threads[] | select(.tid == $pid) | [.node, (.fault_nodes | join(\",\")), .remote_bytes] | join(\" \")" mv.json)" \
  "1 0 $((16 << 20))"
