#!/usr/bin/env python3
"""The per-pick paths of the CUDA register FPS kernel, read off its sm_90
machine code: a way to weigh a change to the kernel where no GPU is at hand.

cuobjdump prints the SASS of every kernel in libdtrain_kernels.so; for each
instantiation of fps_registers_kernel with 16 points a thread (the goal
size, N = 8192) this finds the pick loop (the last backward branch), its
barrier, and the branch that skips the update of a warp whose box the new
centre cannot reach, and prints:

  - the instructions of the whole loop, of the update branch (a warp near
    the new centre: update, its thread's furthest point, the warp
    reductions; in rounds of two or four, with every centre's pass, and
    apart from that as a warp near one centre runs it) and of the rest (every warp's
    path, with the branches of the pick's owner and of thread 0);
  - a latency estimate of the update branch and of the path after the
    barrier: the instructions issued in order, each waiting for its operands,
    with rough Hopper latencies (ALU 5 cycles, shared memory and warp
    reductions 30, shuffles 25). It leaves out the other warps on the same
    scheduler, so it is a lower bound to compare variants by, not a time.

Each instantiation is read: both lanes (DTRAIN_CUDA_FPS_LANE) and rounds of
one, two or four picks (DTRAIN_CUDA_FPS_ROUND).

On the H200 the register kernel takes ~1,430 cycles a pick
(benchmarks/results/gpu_fps_profile.txt), of which the update branch of the
warps near the centre is the part the barrier waits for.

    python3 benchmarks/kernels/fps_sass_paths.py build/kernels/libdtrain_kernels.so \
        [--csv out.csv]

cuobjdump and the nvdisasm it runs: the CUDA toolkit's, or from PyPI's
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels (their bin/ on PATH).
"""

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys

# Cycles until a result can be used, by opcode prefix; 5 for anything else.
LATENCY = {"REDUX": 30, "LDS": 30, "SHFL": 25, "S2R": 20, "LDC": 20, "ULDC": 20, "BAR": 20,
           "MUFU": 16}
# Opcodes that write no register (their first operand is a source).
NO_DESTINATION = ("ST", "BRA", "BAR", "BSSY", "BSYNC", "WARPSYNC", "EXIT", "RED.", "ATOM", "NOP")


def cuobjdump_binary():
    found = shutil.which("cuobjdump")
    if found:
        return found
    toolkit = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "cuobjdump")
    if os.path.exists(toolkit):
        return toolkit
    sys.exit("fps_sass_paths: no cuobjdump on PATH or in the CUDA toolkit "
             "(the wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm carry both in bin/)")


def functions(sass):
    """{mangled name: [(address, instruction)]} of a cuobjdump -sass listing."""
    found, current = {}, None
    for line in sass.splitlines():
        name = re.search(r"Function : (\S+)", line)
        if name:
            current = found.setdefault(name.group(1), [])
            continue
        code = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if code and current is not None:
            current.append((int(code.group(1), 16), code.group(2)))
    return found


def branch_target(instruction):
    return int(re.search(r"0x([0-9a-f]+)", instruction.split("BRA", 1)[1]).group(1), 16)


def registers(text):
    return re.findall(r"\b(U?R\d+|U?P\d)\b", text)


def in_order_cycles(path):
    """Cycles for one warp to issue `path` in order, each instruction waiting
    for its operands, until its last result is ready."""
    ready, clock = {}, 0
    for _, instruction in path:
        guard = ""
        guarded = re.match(r"(@!?U?P\w+)\s+(.*)", instruction)
        if guarded:
            guard, instruction = guarded.groups()
        opcode = instruction.split()[0]
        operands = [o.strip() for o in instruction[len(opcode):].replace(".reuse", "").split(",")
                    if o.strip()]
        if "SETP" in opcode or opcode.startswith("PLOP"):
            written = 2
        elif opcode.startswith(NO_DESTINATION):
            written = 0
        else:
            written = 1
        sources = [r for o in operands[written:] for r in registers(o)] + registers(guard)
        start = max([clock] + [ready.get(r, 0) for r in sources])
        clock = start + 1
        latency = next((v for k, v in LATENCY.items() if opcode.startswith(k)), 5)
        for r in (r for o in operands[:written] for r in registers(o)):
            ready[r] = start + latency
    return max([clock] + list(ready.values()))


def pick_paths(code):
    """The pick loop's parts: (loop, update branch, after the barrier)."""
    # The pick loop: the outermost backward branch around the last barrier
    # (not, say, the jump back from the fallback of a warp reduction that the
    # compiler could not prove convergent, which lands inside the loop).
    last_barrier = [a for a, i in code if "BAR.SYNC" in i][-1]
    backward = [(a, i) for a, i in code if "BRA" in i
                and branch_target(i) <= last_barrier < a]
    end, jump = min(backward, key=lambda branch: branch_target(branch[1]))
    loop = [(a, i) for a, i in code if branch_target(jump) <= a <= end]
    barrier = next(a for a, i in loop if "BAR.SYNC" in i)
    reductions = [a for a, i in loop if "REDUX" in i and a < barrier]
    update = []
    for address, instruction in loop:
        if "BRA" in instruction and address < reductions[0]:
            target = branch_target(instruction)
            if reductions[-1] < target < barrier:
                update = [(a, i) for a, i in loop if address < a < target]
                break
    after = [(a, i) for a, i in loop if a > barrier]
    return loop, update, after


def near_one_centre(update, rounds):
    """The update branch of a warp near one centre only: in rounds of two or
    four, without the other centres' passes (each centre's pass is a forward
    branch inside the update branch that skips it; the first stays)."""
    if rounds == 1:
        return update
    first, last = update[0][0], update[-1][0]
    passes = [(a, branch_target(i)) for a, i in update
              if "BRA" in i and first < branch_target(i) <= last]
    return [(a, i) for a, i in update
            if not any(skip < a < target for skip, target in passes[1:])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("library", help="libdtrain_kernels.so (built with sm_90 code)")
    parser.add_argument("--csv", help="also write the rows here")
    args = parser.parse_args()
    sass = subprocess.run([cuobjdump_binary(), "-sass", "-arch", "sm_90", args.library],
                          check=True, capture_output=True, text=True).stdout
    rows = []
    for name, code in functions(sass).items():
        variant = re.search(r"fps_registers_kernelILi16ELb([01])ELi([124])E", name)
        if not variant:
            continue
        loop, update, after = pick_paths(code)
        one_centre = near_one_centre(update, int(variant.group(2)))
        rows.append({
            "kernel": "registers",
            "lane": "tree" if variant.group(1) == "1" else "pass",
            "round": int(variant.group(2)),
            "loop_instructions": len(loop),
            "update_instructions": len(update),
            "rest_instructions": len(loop) - len(update),
            "update_cycles_estimate": in_order_cycles(update),
            "update_near_one_centre_instructions": len(one_centre),
            "update_near_one_centre_cycles_estimate": in_order_cycles(one_centre),
            "after_barrier_cycles_estimate": in_order_cycles(after),
        })
    if not rows:
        sys.exit("fps_sass_paths: no fps_registers_kernel<16, lane, round> with sm_90 code in "
                 + args.library)
    rows.sort(key=lambda row: (row["round"], row["lane"]))
    for row in rows:
        print(f"register kernel, lane {row['lane']}, rounds of {row['round']}: loop "
              f"{row['loop_instructions']} "
              f"instructions; update branch {row['update_instructions']} "
              f"(~{row['update_cycles_estimate']} cycles in order; near one centre "
              f"{row['update_near_one_centre_instructions']}, "
              f"~{row['update_near_one_centre_cycles_estimate']}); the rest "
              f"{row['rest_instructions']}; after the barrier "
              f"~{row['after_barrier_cycles_estimate']} cycles")
    if args.csv:
        with open(args.csv, "w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
