# devices: the host always; GPUs, or one line saying why there are none; the node's topology
# from /sys (here a made-up two-socket node's, so the output is the same everywhere).
source "$(dirname "$0")/../e2e_lib.sh"
expect_exit 0 "$BIN" devices
grep -q "^host " <<<"$OUT" || fail "no host line: $OUT"
grep -qE "^(gpus  none: .+|cuda  driver )" <<<"$OUT" || fail "no GPU line: $OUT"
grep -qE "^cpus  [0-9]+ sockets?, [0-9]+ cores?, [0-9]+ hardware threads?$" <<<"$OUT" || fail "no cpus line: $OUT"
expect_exit 0 "$BIN" devices --format json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["host"]["logical_cpus"] > 0; assert j["gpus"] or j["gpu_status"]; assert j["topology"]["threads"] > 0' "$SCRATCH/out" \
  || fail "devices json: $OUT"
expect_exit 2 "$BIN" devices --format csv; one_line_error
expect_exit 2 "$BIN" devices --sysfs "$SCRATCH/nowhere"; one_line_error

# A node as the kernel lays it out: bus/pci/devices/X links into devices/pciD:B/<bridges>/X.
SYS=$SCRATCH/sys
put() { mkdir -p "$(dirname "$1")"; echo "$2" >"$1"; }
for c in $(seq 0 15); do
  put "$SYS/devices/system/cpu/cpu$c/topology/physical_package_id" $(((c % 8) / 4))
  put "$SYS/devices/system/cpu/cpu$c/topology/core_id" $((c % 4))
done
put "$SYS/devices/system/cpu/online" 0-15
put "$SYS/devices/system/node/node0/cpulist" 0-3,8-11
put "$SYS/devices/system/node/node0/meminfo" "Node 0 MemTotal:       1048576 kB"
put "$SYS/devices/system/node/node0/distance" "10 21"
put "$SYS/devices/system/node/node1/cpulist" 4-7,12-15
put "$SYS/devices/system/node/node1/meminfo" "Node 1 MemTotal:       1048576 kB"
put "$SYS/devices/system/node/node1/distance" "21 10"
mkdir -p "$SYS/bus/pci/devices"
# pci HOST_BRIDGE CLASS VENDOR NUMA SUBDIR BRIDGE... FUNCTION
pci() {
  local bridge=$1 class=$2 vendor=$3 numa=$4 sub=$5; shift 5
  local dev="$SYS/devices/$bridge/$(IFS=/; echo "$*")"
  put "$dev/class" "$class"; put "$dev/vendor" "$vendor"; put "$dev/device" 0x2330
  put "$dev/numa_node" "$numa"; put "$dev/local_cpulist" "$([ "$numa" = 0 ] && echo 0-3,8-11 || echo 4-7,12-15)"
  put "$dev/current_link_speed" "32.0 GT/s PCIe"; put "$dev/current_link_width" 16
  [ -z "$sub" ] || mkdir -p "$dev/$sub"
  ln -s "$dev" "$SYS/bus/pci/devices/${!#}"
}
pci pci0000:00 0x030200 0x10de 0 "" 0000:00:01.0 0000:01:00.0 0000:02:00.0 0000:03:00.0
pci pci0000:00 0x020700 0x15b3 0 infiniband/mlx5_0 0000:00:01.0 0000:01:00.0 0000:02:01.0 0000:04:00.0
pci pci0000:00 0x030200 0x10de 0 "" 0000:00:01.0 0000:01:00.0 0000:02:02.0 0000:05:00.0
pci pci0000:00 0x010802 0x144d 0 nvme/nvme0 0000:00:02.0 0000:06:00.0
pci pci0000:40 0x030200 0x10de 0 "" 0000:40:01.0 0000:41:00.0 0000:42:00.0 0000:43:00.0
pci pci0000:80 0x030200 0x10de 1 "" 0000:80:01.0 0000:81:00.0 0000:82:00.0 0000:83:00.0 0000:84:00.0 0000:85:00.0
pci pci0000:80 0x020700 0x15b3 1 infiniband/mlx5_1 0000:80:01.0 0000:81:00.0 0000:82:01.0 0000:86:00.0
pci pci0000:00 0x060400 0x8086 0 "" 0000:00:07.0
expect_exit 0 "$BIN" devices --sysfs "$SYS"
sed -n '/^cpus /,$p' "$SCRATCH/out" >"$SCRATCH/topology" && mv "$SCRATCH/topology" "$SCRATCH/out"
golden devices_topology.txt
# docs/benchmarks.md shows this output: it must be the output.
python3 -c 'import sys; sys.exit(open(sys.argv[1]).read() not in open(sys.argv[2]).read())' \
  "$SCRATCH/out" "$SRC/docs/benchmarks.md" || fail "docs/benchmarks.md does not show the topology output"
expect_exit 0 "$BIN" devices --sysfs "$SYS" --format json
python3 - "$SCRATCH/out" <<'PY' || fail "topology json: $OUT"
import json, sys
t = json.load(open(sys.argv[1]))["topology"]
assert (t["sockets"], t["cores"], t["threads"]) == (2, 8, 16), t
p = t["paths"]
assert p["GPU0"]["mlx5_0"] == "PIX" and p["GPU0"]["GPU2"] == "NODE" and p["GPU0"]["GPU3"] == "SYS", p
assert p["GPU3"]["mlx5_1"] == "PXB", p
gpu3 = [d for d in t["pci"] if d["label"] == "GPU3"][0]
assert gpu3["nearest_nic"] == {"label": "mlx5_1", "path": "PXB"}, gpu3
assert [d["label"] for d in t["pci"]] == ["GPU0", "mlx5_0", "GPU1", "nvme0", "GPU2", "GPU3", "mlx5_1"], t["pci"]
PY
echo "devices: ok"
