import re, subprocess, sys
f = sys.argv[1]
asm = subprocess.run(["/usr/lib/llvm-19/bin/llc", "-O3", "-mcpu=znver4", "-o", "-", f], capture_output=True, text=True).stdout
blocks, cur, name = {}, [], None
for line in asm.splitlines():
    m = re.match(r"^(\.LBB\w+|\w+):", line)
    if m:
        if name: blocks[name] = cur
        name, cur = m.group(1), []
    elif line.startswith("\t") and not line.strip().startswith((".", "#")):
        cur.append(line)
if name: blocks[name] = cur
for n, b in blocks.items():
    nd = sum(1 for l in b if "vdivps" in l and "zmm" in l)
    if not nd: continue
    open("/tmp/s17gelu/b.s", "w").write("\n".join(b) + "\n")
    out = subprocess.run(["/usr/lib/llvm-19/bin/llvm-mca", "-mcpu=znver4", "-iterations=300", "/tmp/s17gelu/b.s"], capture_output=True, text=True).stdout
    cyc = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1)); rt = float(re.search(r"Block RThroughput:\s+([\d.]+)", out).group(1))
    print(f"{f} {n}: instrs {len(b)} vdivps {nd}  cycles/16 lanes {cyc/300/nd:.2f}  rthroughput/16 lanes {rt/nd:.2f}  instrs/16 lanes {len(b)/nd:.1f}")
