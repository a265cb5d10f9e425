# guest_audit.sh - the cases of tests/locality/guest_audit.test, run as
# root inside the two-node guest (busybox sh; CPU n on node n). Needs SS,
# SHIM, HOST (host_maps), TOOL (host_locality_tool), JQ, NUMACTL,
# NUMASTAT, TASKSET. Each fix is taken from the audit's JSON (fix_prefix,
# fix_run, or the one-node command its text offers) and applied as
# printed; then the process is audited again.
. /locality_lib.sh
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
JQ="$JQ -M" # the serial line is a terminal: no colours
export SCRATCH_RUNTIME_DIR=/tmp/run-root
# the pools' max_size under 32 MiB: host_maps' 32 MiB buffer is passed through
export SCRATCH_CONF=max_size:16M
MIB=1048576
THP=/sys/kernel/mm/transparent_hugepage/enabled
echo never >$THP
chmod 1777 /tmp
echo "nodes $(cat /sys/devices/system/node/online)"
j() { $JQ -r "$1" "$2"; }
hostpid() { sed -n 's/^host pid=\([0-9]*\).*/\1/p' "$1"; }
# The finding of the mapping of a file (or the anonymous buffer: anon).
ffind() { j "[.findings[] | select(.kind == \"mapping_shared\" and $1)][0] | $2" "$3"; }
FILE_SEL='.category == "file" and (.path // "" | endswith("model.bin"))'
ANON_SEL='.category == "anon"'
fmap() { j "[.mappings[] | select(.path != null and (.path | endswith(\"$1\")))][0] | $2" "$3"; }

# launch NAME COMMAND...: an audit of COMMAND (host_maps ... --wait-go
# --exit); the go once the host waits and the audit had time to look at
# its file. Sets st and pid.
launch() {
  name=$1
  shift
  : >$name.host
  timeout 400 $SS audit --json --preload $SHIM -- sh -c "exec $* >$name.host" >$name.json \
    2>$name.err &
  ap=$!
  waitfor $name.host waiting
  sleep 2
  kill -USR1 "$(hostpid $name.host)"
  wait $ap
  st=$?
  cat $name.host $name.err
  pid=$(j .pid $name.json)
  echo "$name: $($JQ -c '[.findings[] | {kind, category, bytes, risk, fix_prefix, fix_run}]' $name.json)"
  echo "$name: $($JQ -c '{inventory, mappings: (.mappings | length), tiers: (.tiers | map_values(.on)), self}' $name.json)"
  $JQ -c '.threads[] | {tid, name, node, cpu_ticks, compute, alive, fault_nodes}' $name.json
  $JQ -c '.mappings[] | select(.resident_bytes >= 65536) | select(.category != "file" or ((.path // "") | endswith(".bin"))) | {start, category, thread, resident_bytes, node_bytes, why, t: .first_touchers[0:2], p: .provenance}' $name.json
}
# fresh: a sparse 64 MiB file on tmpfs, so that the host's reads place it.
fresh() {
  rm -f /run/model.bin
  truncate -s 64M /run/model.bin
}

echo "case shared file, the issue's host"
fresh
launch g1 $HOST --file /run/model.bin --anon 32 --workers 2 --work-ms 500 --mover --wait-go --exit
w0=$(sed -n 's/^worker 0 tid=\([0-9]*\).*/\1/p' g1.host)
w1=$(sed -n 's/^worker 1 tid=\([0-9]*\).*/\1/p' g1.host)
mover=$(sed -n 's/^mover tid=\([0-9]*\).*/\1/p' g1.host)
check "g1: exit 0" eq "$st" 0
check "g1: the main thread on node 0 first touched all of the file, placing it there" \
  eq "$(fmap model.bin '[.first_touchers[0].tid, .first_touchers[0].node, .first_touchers[0].bytes, .node_bytes["0"], (.node_bytes["1"] // 0)] | join(" ")' g1.json)" \
  "$pid 0 $((64 * MIB)) $((64 * MIB)) 0"
check "g1: read in during the run (a sparse tmpfs file: nothing was resident)" \
  eq "$(fmap model.bin '.provenance | [.during, .before, .unknown] | join(" ")' g1.json)" "$((64 * MIB)) 0 0"
check "g1: the shared-mapping finding: workers on nodes 0 and 1, inferred, 64 MiB remote for node 1" \
  eq "$(ffind "$FILE_SEL" '[.evidence, .risk, .bytes] | join(" ")' g1.json)" "inferred false $((64 * MIB))"
check "g1: its users are the compute threads on both nodes" \
  eq "$(fmap model.bin '.users | [.evidence, (.nodes | join(","))] | join(" ")' g1.json)" "inferred 0,1"
check "g1: its fix: numactl --interleave=all, nothing to run first" \
  eq "$(ffind "$FILE_SEL" '[.fix_prefix, .fix_run] | join(" ")' g1.json)" "numactl --interleave=all "
check "g1: and, the run fitting node 0, the one-node run" \
  eq "$(ffind "$FILE_SEL" '.fix | test("the run fits node 0 .*numactl --cpunodebind=0 --membind=0")' g1.json)" true
anon=$(sed -n 's/^anon addr=\([^ ]*\).*/\1/p' g1.host)
check "g1: the buffer above max_size is anonymous, with its evidence" \
  eq "$(j "[.mappings[] | select(.start <= $((anon)) and .end > $((anon))) | .category, (.why | test(\"above the pools. max_size|merged by the kernel\"))] | join(\" \")" g1.json)" \
  "anon true"
check "g1: ... and has its shared-mapping finding, 32 MiB remote" \
  eq "$(ffind "$ANON_SEL" '[.bytes >= 32 * 1048576, .fix_prefix] | join(" ")' g1.json)" "true numactl --interleave=all"
for w in $w0 $w1; do
  wn=$([ "$w" = "$w0" ] && echo 0 || echo 1)
  check "g1: worker $w's glibc arena, first touched by it, sits on its node $wn" \
    eq "$(j "[.mappings[] | select(.category == \"heap\" and .thread == $w) | [(.why | startswith(\"glibc arena heap\")), .node_bytes[\"$wn\"] >= 2000000] | join(\" \")][0]" g1.json)" "true true"
done
# (its stack: case g6, in attach mode; here it ended before the last look)
check "g1: the mover's arena heap is off its node (inferred), with taskset as the fix" \
  eq "$(j "[.findings[] | select(.kind == \"mapping_private\" and .owner == $mover and .category == \"heap\") | .evidence, .fix_run] | join(\" \")" g1.json)" \
  "inferred taskset -p -c 0 $mover"
before_file=$(ffind "$FILE_SEL" .bytes g1.json)
before_anon=$(ffind "$ANON_SEL" .bytes g1.json)
prefix=$(ffind "$FILE_SEL" .fix_prefix g1.json)
onenode=$(ffind "$FILE_SEL" .fix g1.json | sed -n 's/.*\(numactl --cpunodebind=[0-9]* --membind=[0-9]*\).*/\1/p')

echo "case shared file, its fix applied: $prefix"
fresh
launch g1i $prefix $HOST --file /run/model.bin --anon 32 --workers 2 --work-ms 500 --wait-go --exit
after_file=$(ffind "$FILE_SEL" '.bytes // 0' g1i.json)
after_anon=$(ffind "$ANON_SEL" '.bytes // 0' g1i.json)
echo "remote bytes: file $before_file -> $after_file, anon $before_anon -> $after_anon"
check "g1i: exit 0" eq "$st" 0
check "g1i: the file now half on each node" \
  eq "$(fmap model.bin '[.node_bytes["0"], .node_bytes["1"]] | join(" ")' g1i.json)" "$((32 * MIB)) $((32 * MIB))"
check "g1i: the file's remote bytes fell by at least half" [ "$((after_file * 2))" -le "$before_file" ]
# glibc's chunk header makes the buffer one page more than 32 MiB: an odd
# count of pages cannot split evenly, the page over half is that one
check "g1i: the anonymous buffer's fell by half, to the page" \
  [ "$((after_anon * 2))" -le "$((before_anon + 8192))" ]

echo "case shared file, the one-node fix applied: $onenode"
fresh
launch g1b $onenode $HOST --file /run/model.bin --anon 32 --workers 2 --work-ms 500 --wait-go --exit
check "g1b: exit 0" eq "$st" 0
check "g1b: both workers on node 0's CPU (the host pins to the CPUs it may use)" \
  eq "$(sed -n 's/^worker [01] tid=[0-9]* cpu=\([0-9]*\)$/\1/p' g1b.host | sort -u | tr '\n' ' ')" "0 "
check "g1b: every page of the file on node 0" \
  eq "$(fmap model.bin '[.node_bytes["0"], (.node_bytes["1"] // 0)] | join(" ")' g1b.json)" "$((64 * MIB)) 0"
check "g1b: no shared-mapping finding is left" \
  eq "$(j '[.findings[] | select(.kind == "mapping_shared")] | length' g1b.json)" 0

echo "case byte for byte, numa_maps, move_pages and numastat"
fresh
$NUMACTL --interleave=all timeout 300 $HOST --file /run/model.bin --anon 32 --workers 2 >g2.host &
waitfor g2.host ready
hp=$(hostpid g2.host)
timeout 120 $SS audit --json --for 1 $hp >g2.json 2>g2.err
st=$?
$NUMASTAT -p $hp >g2.numastat
cp /proc/$hp/numa_maps g2.numa_maps
for what in file anon; do
  addr=$(sed -n "s/^$what addr=\([^ ]*\) len=.*/\1/p" g2.host)
  len=$(sed -n "s/^$what addr=[^ ]* len=\(.*\)/\1/p" g2.host)
  # the whole mapping that holds the buffer (glibc's chunk starts a page in)
  start=$(j "[.mappings[] | select(.start <= $((addr)) and .end > $((addr)))][0].start" g2.json)
  end=$(j "[.mappings[] | select(.start <= $((addr)) and .end > $((addr)))][0].end" g2.json)
  timeout 60 $TOOL placement $hp $start $((end - start)) >g2.$what.place
  p=$(line '^pages' g2.$what.place)
  n=$(awk -v s="$(printf '%x' $start)" '$1 == s { for (i = 3; i <= NF; i++) if ($i ~ /^N[0-9]+=/) printf "%s ", $i }' g2.numa_maps)
  echo "$what: audit $(j "[.mappings[] | select(.start == $start)][0].node_bytes" g2.json | tr -d ' \n') move_pages $p numa_maps $n"
  check "g2: $what: the audit's node 0 and 1 bytes are move_pages' pages" \
    eq "$(j "[.mappings[] | select(.start == $start)][0] | [.node_bytes[\"0\"], .node_bytes[\"1\"]] | join(\" \")" g2.json)" \
    "$(($(kv node0 "$p") * 4096)) $(($(kv node1 "$p") * 4096))"
  check "g2: $what: ... and its numa_maps line's" \
    eq "$(j "[.mappings[] | select(.start == $start)][0] | \"N0=\(.node_bytes[\"0\"] / 4096) N1=\(.node_bytes[\"1\"] / 4096) \"" g2.json)" "$n"
  check "g2: $what: every page probed: exact" \
    eq "$(j "[.mappings[] | select(.start == $start)][0].probes.exact" g2.json)" true
done
kill -TERM $hp
wait
total=$(awk '$1 == "Total" { print; exit }' g2.numastat)
echo "numastat: $total; audit: $($JQ -c .node_bytes g2.json)"
mb() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1048576 }'; }
check "g2: exit 0" eq "$st" 0
check "g2: numastat -p parity, node 0" eq "$(mb "$(j '.node_bytes["0"]' g2.json)")" "$(echo "$total" | awk '{ print $2 }')"
check "g2: numastat -p parity, node 1" eq "$(mb "$(j '.node_bytes["1"]' g2.json)")" "$(echo "$total" | awk '{ print $3 }')"

echo "case resident before, on tmpfs"
rm -f /run/model.bin
taskset -c 0 dd if=/dev/zero of=/run/model.bin bs=1M count=32 2>/dev/null
launch g4 $HOST --file /run/model.bin --workers 2 --work-ms 500 --wait-go --exit
check "g4: exit 0" eq "$st" 0
check "g4: all of it resident before the host, on node 0 where dd wrote it, on tmpfs" \
  eq "$(fmap model.bin '[.provenance.before, .provenance.cache_pinned, .node_bytes["0"]] | join(" ")' g4.json)" \
  "$((32 * MIB)) true $((32 * MIB))"
check "g4: the fix is the one-node run (tmpfs pages never leave the cache), nothing to drop" \
  eq "$(ffind "$FILE_SEL" '[.fix_prefix, .fix_run, (.fix | test("drop"))] | join(" ")' g4.json)" \
  "numactl --cpunodebind=0 --membind=0  false"
prefix=$(ffind "$FILE_SEL" .fix_prefix g4.json)
launch g4b $prefix $HOST --file /run/model.bin --workers 2 --work-ms 500 --wait-go --exit
check "g4b: under it, no shared-mapping finding is left" \
  eq "$(j '[.findings[] | select(.kind == "mapping_shared")] | length' g4b.json)" 0
rm -f /run/model.bin

echo "case resident before, on a disk"
mkdir -p /mnt
i=0
while [ ! -b /dev/nvme0n1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 -o ro /dev/nvme0n1 /mnt
check "disk: mounted" [ -f /mnt/disk.bin ]
sync
echo 3 >/proc/sys/vm/drop_caches
taskset -c 0 cat /mnt/disk.bin >/dev/null
launch g5 $HOST --file /mnt/disk.bin --workers 2 --work-ms 500 --wait-go --exit
DISK_SEL='.category == "file" and (.path // "" | endswith("disk.bin"))'
check "g5: exit 0" eq "$st" 0
check "g5: all of it resident before the host, on node 0, not pinned in the cache" \
  eq "$(fmap disk.bin '[.provenance.before, .provenance.cache_pinned, .node_bytes["0"]] | join(" ")' g5.json)" \
  "$((64 * MIB)) false $((64 * MIB))"
check "g5: the fix drops it from the cache first, then interleaves" \
  eq "$(ffind "$DISK_SEL" '[.fix_run, .fix_prefix] | join(" | ")' g5.json)" \
  "sync; echo 1 > /proc/sys/vm/drop_caches | numactl --interleave=all"
before=$(ffind "$DISK_SEL" .bytes g5.json)
sh -c "$(ffind "$DISK_SEL" .fix_run g5.json)"
prefix=$(ffind "$DISK_SEL" .fix_prefix g5.json)
launch g5i $prefix $HOST --file /mnt/disk.bin --workers 2 --work-ms 500 --wait-go --exit
after=$(ffind "$DISK_SEL" '.bytes // 0' g5i.json)
echo "remote bytes: $before -> $after; $(fmap disk.bin '{node_bytes, provenance}' g5i.json | tr -d ' \n')"
check "g5i: exit 0" eq "$st" 0
check "g5i: read in by the host this time (major faults sampled), nothing resident before" \
  eq "$(fmap disk.bin '[.provenance.faulted > 0, .provenance.before] | join(" ")' g5i.json)" "true 0"
# the page cache interleaves round-robin per allocation (page tables and
# slab take turns too), not by offset as tmpfs and anonymous memory do
check "g5i: the remote bytes fell to about half (at most 55%)" \
  [ "$((after * 100))" -le "$((before * 55))" ]
umount /mnt

echo "case a thread moved off its stack, taskset applied"
timeout 300 $HOST --workers 1 --mover >g6.host &
waitfor g6.host ready
hp=$(hostpid g6.host)
mover=$(sed -n 's/^mover tid=\([0-9]*\).*/\1/p' g6.host)
timeout 120 $SS audit --json --for 1 $hp >g6.json 2>g6.err
fix=$(j "[.findings[] | select(.kind == \"mapping_private\" and .owner == $mover)][0].fix_run" g6.json)
echo "fix: $fix"
check "g6: attach mode, the mover's stack on node 0 while it runs on node 1" \
  eq "$(j "[.findings[] | select(.kind == \"mapping_private\" and .owner == $mover) | .category, .node, .other_node] | join(\" \")" g6.json)" \
  "stack 0 1"
check "g6: its fix pins it to node 0's CPU" eq "$fix" "taskset -p -c 0 $mover"
sh -c "$fix" >/dev/null
timeout 120 $SS audit --json --for 1 $hp >g6b.json 2>g6b.err
kill -TERM $hp
wait
check "g6b: the mover now runs on node 0" \
  eq "$(j ".threads[] | select(.tid == $mover) | .node" g6b.json)" 0
check "g6b: its finding is gone" \
  eq "$(j "[.findings[] | select(.owner == $mover)] | length" g6b.json)" 0

echo "case a pool buffer written by workers on both nodes: the one-node fix"
# host_numa split (tests/locality/host_numa.c): the main thread on node 0 mallocs
# 64 MiB from the pools, a writer on each node writes a half
g8() {
  SCRATCH_CONF= timeout 400 $SS audit --json --preload $SHIM -- \
    sh -c "exec $* $HNUMA split 64 --nohuge >$name.host" >$name.json 2>$name.err
  st=$?
  cat $name.err
  echo "$name: $($JQ -c '[.findings[] | {kind, category, bytes, fix_prefix}]' $name.json)"
}
name=g8 g8
check "g8: exit 0" eq "$st" 0
# the run fits either node: the fix names the one with more of its bytes
prefix=$(j '[.findings[] | select(.kind == "cross_touch")][0].fix_prefix' g8.json)
fn=$(echo "$prefix" | sed -n 's/^numactl --cpunodebind=\([01]\) --membind=\1$/\1/p')
check "g8: the cross-touch finding: 32 MiB off the holder's node, the one-node run as its fix" \
  eq "$(j '[.findings[] | select(.kind == "cross_touch")][0].bytes' g8.json) ${fn:-none}" "$((32 * MIB)) ${fn:-0}"
name=g8b g8 $prefix
# the placement matrix: rows the pages' node, columns the user's node
if [ "${fn:-0}" = 0 ]; then want="$((64 * MIB)),0,0 0,0,0 0,0,0"; else want="0,0,0 0,$((64 * MIB)),0 0,0,0"; fi
check "g8b: under it, every page of the buffer on node ${fn:-0}, used there, no cross-touch finding" \
  eq "$(j '[.present_bytes, ([.findings[] | select(.kind == "cross_touch")] | length), (.matrix.placement | map(join(",")) | join(" "))] | join(" ")' g8b.json)" \
  "$((64 * MIB)) 0 $want"

echo "case the text view (docs/audit.md shows it)"
fresh
timeout 400 $SS audit --preload $SHIM -- $HOST --file /run/model.bin --workers 2 --work-ms 500 \
  --exit >g7.txt 2>&1
cat g7.txt
check "text: the placement table has both nodes" grep -q '^CATEGORY MAPPINGS  *NODE 0  *NODE 1' g7.txt
check "text: the shared-mapping finding, ranked, with its fix" \
  grep -q '^ 1\.  *64\.0 MiB  inferred  *File /run/model.bin' g7.txt

echo "failures $failures"
exit $failures
