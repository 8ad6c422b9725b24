"""The host's end of a CLI driven over stdin and stdout, one JSON object a
line: what the CLI modules' `converse` functions share.

A `Pipe` copies every byte the CLI writes to the recording, hands each
parsed object to `messages` (None once stdout closes), keeps every line the
host writes (NAME.client.txt), and closes stdin when the host is done. With
`transcript`, the host's lines go into the recording too, each before the
CLI can have read it: both directions, in the order they happened.
"""

import json
import os
import queue
import signal
import threading
import time


class Pipe:
    def __init__(self, proc, stdout_file, transcript=False):
        self.proc = proc
        self.sent = bytearray()
        self.transcript = stdout_file if transcript else None
        self.lock = threading.Lock()
        self.messages = queue.Queue()
        self.reader = threading.Thread(target=self._read, args=(stdout_file,), daemon=True)
        self.reader.start()

    def _read(self, stdout_file):
        for line in iter(self.proc.stdout.readline, b""):
            with self.lock:
                stdout_file.write(line)
                stdout_file.flush()
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict):
                self.messages.put(msg)
        self.messages.put(None)

    def send(self, msg):
        data = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        self.sent += data
        if self.transcript is not None:
            with self.lock:
                self.transcript.write(data)
                self.transcript.flush()
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def close(self):
        try:
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    def end(self, deadline, grace=30.0):
        """Close stdin and give the CLI `grace` seconds (not past the
        deadline) to exit, then kill it; returns what the host wrote."""
        self.close()
        until = min(deadline, time.monotonic() + grace)
        while self.proc.poll() is None and time.monotonic() < until:
            time.sleep(0.05)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.reader.join(5)
        return bytes(self.sent)
