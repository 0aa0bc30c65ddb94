"""Lockstep turns for the Python peers: the protocol of benchmarks/support/lockstep.h
(Note [Lockstep benchmarks]). A spec "DIR:NAME" joins the turns; an empty
spec runs alone (every call returns at once)."""

import os
import select


class Lockstep:
    def __init__(self, spec, rank, timeout_s=600):
        self.rank = rank
        self.timeout_s = timeout_s
        self.fd = None
        if not spec:
            return
        self.dir, sep, self.name = spec.rpartition(":")
        if not sep or not self.dir or not self.name:
            raise SystemExit(f"--lockstep must be DIR:NAME, got '{spec}'")
        with open(os.path.join(self.dir, "order")) as f:
            self.order = [line.strip() for line in f if line.strip()]
        if self.name not in self.order:
            raise SystemExit(f"lockstep: '{self.name}' is not listed in '{self.dir}/order'")
        # Read-write: the open never blocks and never sees end-of-file.
        self.fd = os.open(os.path.join(self.dir, f"{self.name}.{rank}"), os.O_RDWR)

    @property
    def active(self):
        return self.fd is not None

    def wait_turn(self, round_):
        if not self.active:
            return
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        line = b""
        while not line.endswith(b"\n"):
            if not poller.poll(self.timeout_s * 1000):
                raise SystemExit(f"lockstep: '{self.name}' rank {self.rank} got no turn for round "
                                 f"{round_} within {self.timeout_s} s; another participant has "
                                 "probably failed")
            line += os.read(self.fd, 1)  # one byte: the FIFO may hold the next message
        if int(line) != round_:
            raise SystemExit(f"lockstep: '{self.name}' expected round {round_}, got {int(line)}")

    def pass_turn(self, round_):
        if not self.active or self.rank != 0:
            return
        i = self.order.index(self.name)
        last = i + 1 == len(self.order)
        nxt = self.order[0] if last else self.order[i + 1]
        message = f"{round_ + 1 if last else round_}\n".encode()
        for file in os.listdir(self.dir):
            head, _, tail = file.rpartition(".")
            if head == nxt and tail.isdigit():
                fd = os.open(os.path.join(self.dir, file), os.O_WRONLY | os.O_NONBLOCK)
                try:
                    os.write(fd, message)
                finally:
                    os.close(fd)
