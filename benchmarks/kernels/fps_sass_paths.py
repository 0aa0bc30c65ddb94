#!/usr/bin/env python3
"""The per-pick paths of the CUDA register and leader FPS kernels, read off
their sm_90 machine code: a way to weigh a change to a kernel where no GPU is
at hand.

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
one, two or four picks (DTRAIN_CUDA_FPS_ROUND). `round_chain_cycles_estimate`
is what one round waits for in order: after the barrier, then a warp near
one centre updating; `pick_chain_cycles_estimate` divides it by the picks a
round takes at the goal size (`picks_per_round`, from the CPU models).

The leader kernel (fps_leader_kernel at the goal size: 1024 threads of 8
points, 512 of 16 with rounds of one, two or four picks; Note [FPS with one
picking warp]) has two loops: the
other warps' (arrive at barrier 1, wait at barrier 2, read the centre; the
update branch when named) and the leader's (wait at barrier 1, reduce the
slots, test every warp's box, publish, arrive at barrier 2). Its rows give
the other warps' loop with and without the update, the leader's loop
without its own update (`leader_rest_instructions`), and the round's
chain: from barrier 2 through the update of a warp named for one centre to
its arrival at barrier 1, then the leader from barrier 1 to its arrival at
barrier 2 (the barriers' own latency left out).

On the H200 the register kernel takes ~1,430 cycles a pick
(benchmarks/results/gpu_fps_profile.txt), of which the update branch of the
warps near the centre is the part the barrier waits for.

`warp_instructions_per_pick` is what every warp of the block issues for one
pick, at the goal size: each warp its loop without the update branch, and
the warps that update the branch of a warp near one centre, as many as the
CPU models count for 8192 uniform points -> 1024, divided by the picks a
round takes (benchmarks/results/fps_register_rounds_model.csv,
fps_leader_model.csv). The register kernel's profile on the H200 counted
2,436.

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
    loop = loop_around(code, [a for a, i in code if "BAR.SYNC" in i][-1])
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


def barrier_at(code, kind, barrier_id):
    """The address of the first BAR.<kind> on barrier `barrier_id` (kind SYNC or ARV)."""
    return next(a for a, i in code if re.match(rf"BAR\.{kind}\S* 0x{barrier_id}\b", i))


def loop_around(code, address):
    """The instructions of the outermost loop whose backward branch jumps over `address`
    (not, say, the jump back from the fallback of a warp reduction that the compiler could
    not prove convergent, which lands inside the loop)."""
    backward = [(a, i) for a, i in code if "BRA" in i and branch_target(i) <= address < a]
    end, jump = min(backward, key=lambda branch: branch_target(branch[1]))
    return [(a, i) for a, i in code if branch_target(jump) <= a <= end]


def skipped_branch(loop, before):
    """The instructions of a warp's update: those the loop's first forward branch before
    `before` jumps over."""
    for address, instruction in loop:
        if "BRA" in instruction and address < before and loop[0][0] < branch_target(instruction):
            target = branch_target(instruction)
            return [(a, i) for a, i in loop if address < a < target]
    return []


def leader_row(code, threads, per_thread, rounds):
    """The leader kernel's paths (see the module's docstring)."""
    arrive_slots = barrier_at(code, "ARV", 1)
    wait_centre = barrier_at(code, "SYNC", 2)
    others = loop_around(code, arrive_slots)
    update = skipped_branch(others, arrive_slots)
    one_centre = near_one_centre(update, rounds)
    wait_slots = barrier_at(code, "SYNC", 1)
    arrive_centre = barrier_at(code, "ARV", 2)
    leader_loop = loop_around(code, wait_slots)
    leader_update = skipped_branch(leader_loop, wait_slots)
    leader = [(a, i) for a, i in leader_loop if wait_slots <= a <= arrive_centre]
    # A warp near one centre: from barrier 2 round the loop to barrier 1.
    skipped = {a for a, _ in update} - {a for a, _ in one_centre}
    worker_chain = ([(a, i) for a, i in others if a > wait_centre]
                    + [(a, i) for a, i in others if a <= arrive_slots and a not in skipped])
    leader_cycles = in_order_cycles(leader)
    return {
        "kernel": "leader",
        "lane": "tree",
        "round": rounds,
        "threads": threads,
        "points_per_thread": per_thread,
        "loop_instructions": len(others),
        "update_instructions": len(update),
        "rest_instructions": len(others) - len(update),
        "update_cycles_estimate": in_order_cycles(update),
        "update_near_one_centre_instructions": len(one_centre),
        "update_near_one_centre_cycles_estimate": in_order_cycles(one_centre),
        "leader_rest_instructions": len(leader_loop) - len(leader_update),
        "after_barrier_cycles_estimate": leader_cycles,
        "round_chain_cycles_estimate": in_order_cycles(worker_chain) + leader_cycles,
    }


def goal_rounds(results):
    """At the goal size, from the CPU models' CSVs in `results`: {(kernel, threads, round):
    (warps updating per round, picks per round)}."""
    found = {}
    goal = {"cloud": "uniform", "n": "8192", "npoint": "1024"}
    for kernel, name in (("registers", "fps_register_rounds_model.csv"),
                         ("leader", "fps_leader_model.csv")):
        with open(os.path.join(results, name), newline="") as f:
            for row in csv.DictReader(f):
                if all(row[k] == v for k, v in goal.items()):
                    threads = int(row.get("threads", 512))
                    found[(kernel, threads, int(row["round"]))] = (
                        float(row["warps_updating_per_round"]), float(row["picks_per_round"]))
    return found


def warp_instructions_per_round(row, updating):
    """Every warp's loop without its update, and the update of a warp near one centre in the
    warps that run it; for the leader kernel, the leader's own loop in place of one other
    warp's."""
    warps = row["threads"] // 32
    update = row["update_near_one_centre_instructions"]
    if row["kernel"] == "registers":
        return warps * row["rest_instructions"] + updating * update
    return (warps - 1) * row["rest_instructions"] + updating * update + row[
        "leader_rest_instructions"]


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
    parser.add_argument("--models", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "results"),
        help="folder of the CPU models' CSVs (default: benchmarks/results)")
    args = parser.parse_args()
    counts = goal_rounds(args.models)
    sass = subprocess.run([cuobjdump_binary(), "-sass", "-arch", "sm_90", args.library],
                          check=True, capture_output=True, text=True).stdout
    rows = []
    for name, code in functions(sass).items():
        leader = re.search(r"fps_leader_kernelILj(1024ELi8|512ELi16)ELi([124])E", name)
        if leader:
            threads, per_thread = leader.group(1).split("ELi")
            rows.append(leader_row(code, int(threads), int(per_thread), int(leader.group(2))))
            continue
        variant = re.search(r"fps_registers_kernelILi16ELb([01])ELi([124])E", name)
        if not variant:
            continue
        loop, update, after = pick_paths(code)
        one_centre = near_one_centre(update, int(variant.group(2)))
        after_cycles = in_order_cycles(after)
        rows.append({
            "kernel": "registers",
            "lane": "tree" if variant.group(1) == "1" else "pass",
            "round": int(variant.group(2)),
            "threads": 512,
            "points_per_thread": 16,
            "loop_instructions": len(loop),
            "update_instructions": len(update),
            "rest_instructions": len(loop) - len(update),
            "update_cycles_estimate": in_order_cycles(update),
            "update_near_one_centre_instructions": len(one_centre),
            "update_near_one_centre_cycles_estimate": in_order_cycles(one_centre),
            "after_barrier_cycles_estimate": after_cycles,
            "round_chain_cycles_estimate": after_cycles + in_order_cycles(one_centre),
        })
    if not rows:
        sys.exit("fps_sass_paths: no fps_registers_kernel<16, lane, round> with sm_90 code in "
                 + args.library)
    for row in rows:
        key = (row["kernel"], row["threads"], row["round"])
        if key in counts:
            warps, picks = counts[key]
            row["picks_per_round"] = picks
            row["pick_chain_cycles_estimate"] = round(row["round_chain_cycles_estimate"] / picks)
            row["warp_instructions_per_pick"] = round(
                warp_instructions_per_round(row, warps) / picks)
    rows.sort(key=lambda row: (row["kernel"], row["round"], row["lane"], row["threads"]))
    for row in rows:
        if row["kernel"] == "leader":
            print(f"leader kernel, {row['threads']} threads of {row['points_per_thread']} "
                  f"points, rounds of {row['round']}: the other warps' loop "
                  f"{row['loop_instructions']} instructions, "
                  f"{row['rest_instructions']} without the update branch "
                  f"({row['update_instructions']}, ~{row['update_cycles_estimate']} cycles in "
                  f"order; near one centre {row['update_near_one_centre_instructions']}); the "
                  f"leader's loop {row['leader_rest_instructions']} without its update, from "
                  f"barrier to barrier ~{row['after_barrier_cycles_estimate']} cycles; a "
                  f"round's chain ~{row['round_chain_cycles_estimate']} cycles, a pick's "
                  f"~{row.get('pick_chain_cycles_estimate', '?')}; "
                  f"~{row.get('warp_instructions_per_pick', '?')} warp-instructions a pick")
            continue
        print(f"register kernel, lane {row['lane']}, rounds of {row['round']}: loop "
              f"{row['loop_instructions']} "
              f"instructions; update branch {row['update_instructions']} "
              f"(~{row['update_cycles_estimate']} cycles in order; near one centre "
              f"{row['update_near_one_centre_instructions']}, "
              f"~{row['update_near_one_centre_cycles_estimate']}); the rest "
              f"{row['rest_instructions']}; after the barrier "
              f"~{row['after_barrier_cycles_estimate']} cycles; a round's chain "
              f"~{row['round_chain_cycles_estimate']} cycles, a pick's "
              f"~{row.get('pick_chain_cycles_estimate', '?')}; "
              f"~{row.get('warp_instructions_per_pick', '?')} warp-instructions a pick")
    if args.csv:
        with open(args.csv, "w", newline="") as out:
            fields = list(dict.fromkeys(key for row in rows for key in row))
            writer = csv.DictWriter(out, fieldnames=fields, restval="")
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
