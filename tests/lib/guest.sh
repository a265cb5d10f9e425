# guest.sh - sourced by the tests/locality/guest_*.test scripts: a two-node
# NUMA guest.
#
# This machine has one NUMA node. Under QEMU's TCG (software emulation) a
# stock Debian kernel boots with two nodes in 2-3 s, and inside it the real
# kernel places first-touched pages on the node of the CPU that touched
# them: placement, move_pages(2), numa_maps and mbind are the kernel's own.
# Both nodes are the same host memory, so a guest test checks placement,
# never speed.
#
#   guest_setup BINARY...   kernel and initramfs for one boot: busybox, the
#                           given programs and shared objects, and every
#                           library they load, at their own paths
#   guest_run SCRIPT        boot once, run the sh SCRIPT (a file) as root
#                           inside, with two CPUs (CPU n on node n); its
#                           output is in $GUEST_OUT, its exit status is
#                           guest_run's
#
# The kernel is Debian's cloud kernel (CONFIG_NUMA, ACPI SRAT, perf events,
# THP and the 8250 console built in; no modules needed): $SCRATCH_GUEST_KERNEL,
# or the one cached in the build tree, else fetched once with apt-get
# download. Automatic NUMA balancing is off (it would migrate pages after
# first touch). A test skips (77) only when QEMU or a kernel cannot be had;
# a guest that boots and does not report fails.
. "$SCRATCH_TOP_BUILDDIR/tests/lib/env.sh"

GUEST_QEMU=$(command -v qemu-system-x86_64 2>/dev/null)
GUEST_BUSYBOX=$(command -v busybox 2>/dev/null)
GUEST_CACHE=$top_builddir/tests/lib/guest
GUEST_TIMEOUT=${GUEST_TIMEOUT:-240}

# guest_kernel: the kernel image's path on stdout, fetching it once.
guest_kernel() {
  if [ -n "${SCRATCH_GUEST_KERNEL:-}" ]; then
    echo "$SCRATCH_GUEST_KERNEL"
    return
  fi
  if [ ! -f "$GUEST_CACHE/vmlinuz" ]; then
    mkdir -p "$GUEST_CACHE" || return 1
    d=$(mktemp -d "$GUEST_CACHE/fetch.XXXXXX") || return 1
    pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
      awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
    # apt-get download as root warns that _apt cannot write d: harmless.
    if [ -n "$pkg" ] && (cd "$d" && apt-get download -qq "$pkg" >/dev/null 2>&1) &&
      dpkg-deb --fsys-tarfile "$d"/*.deb | tar -x -C "$d" ./boot/ 2>/dev/null; then
      mv "$d"/boot/vmlinuz-* "$GUEST_CACHE/vmlinuz"
    fi
    rm -rf "$d"
  fi
  test -f "$GUEST_CACHE/vmlinuz" && echo "$GUEST_CACHE/vmlinuz"
}

# guest_copy FILE: FILE and the libraries it loads into the initramfs tree,
# at the same paths.
guest_copy() {
  for f in "$1" $(ldd "$1" 2>/dev/null | awk '/=> \// { print $3 } /^\t\// { print $1 }'); do
    real=$(readlink -f "$f")
    mkdir -p "$GUEST_ROOT$(dirname "$f")"
    cp -n "$real" "$GUEST_ROOT$f" 2>/dev/null || true
  done
}

guest_setup() {
  test -n "$GUEST_QEMU" || skip "qemu-system-x86_64 not found (bootstrap installs qemu-system-x86)"
  test -n "$GUEST_BUSYBOX" || skip "busybox not found (bootstrap installs busybox-static)"
  ldd "$GUEST_BUSYBOX" >/dev/null 2>&1 && skip "$GUEST_BUSYBOX is dynamic: the guest needs busybox-static"
  GUEST_KERNEL=$(guest_kernel) || skip "no kernel: apt-get download linux-image-cloud-amd64 failed"
  test -n "${T:-}" || scratch_test_tmp
  GUEST_ROOT=$T/guest-root
  GUEST_OUT=$T/guest.out
  GUEST_CONSOLE=$T/guest.console
  mkdir -p "$GUEST_ROOT/bin" "$GUEST_ROOT/proc" "$GUEST_ROOT/sys" "$GUEST_ROOT/dev" \
    "$GUEST_ROOT/tmp" "$GUEST_ROOT/run" || exit 99
  cp "$GUEST_BUSYBOX" "$GUEST_ROOT/bin/busybox" || exit 99
  for a in $("$GUEST_BUSYBOX" --list); do
    ln -s busybox "$GUEST_ROOT/bin/$a" 2>/dev/null
  done
  for f in "$@"; do
    guest_copy "$f"
  done
  cat >"$GUEST_ROOT/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs -o mode=1777 run /run
echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null
cd /tmp
sh /test.sh >/dev/ttyS1 2>&1
echo "guest-exit: $?" >/dev/ttyS1
sync
poweroff -f
EOF
  chmod +x "$GUEST_ROOT/init"
}

guest_run() {
  cp "$1" "$GUEST_ROOT/test.sh" || exit 99
  (cd "$GUEST_ROOT" && find . | "$GUEST_BUSYBOX" cpio -o -H newc -R 0:0 2>/dev/null) \
    >"$T/initrd.cpio" || fail "could not build the initramfs"
  : >"$GUEST_OUT"
  # TCG: this machine's /dev/kvm runs only guests built for it.
  timeout -k 5 "$GUEST_TIMEOUT" "$GUEST_QEMU" -accel tcg -smp 2 -m 1G \
    -object memory-backend-ram,id=m0,size=512M -object memory-backend-ram,id=m1,size=512M \
    -numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1,memdev=m1 \
    -kernel "$GUEST_KERNEL" -initrd "$T/initrd.cpio" \
    -append "console=ttyS0 panic=-1 rdinit=/init numa_balancing=disable quiet" \
    -display none -monitor none -no-reboot \
    -serial "file:$GUEST_CONSOLE" -serial "file:$GUEST_OUT" </dev/null >"$T/qemu.log" 2>&1
  qs=$?
  # The serial line ends lines with \r\n.
  tr -d '\r' <"$GUEST_OUT" >"$T/guest.out.tmp" && mv "$T/guest.out.tmp" "$GUEST_OUT"
  st=$(sed -n 's/^guest-exit: \([0-9]*\).*/\1/p' "$GUEST_OUT" | tail -n 1)
  if [ -z "$st" ]; then
    tail -n 20 "$GUEST_CONSOLE" "$T/qemu.log" >&2
    fail "the guest never reported (qemu exit status $qs)"
  fi
  return "$st"
}
