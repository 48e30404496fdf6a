# execute_code's runner (internal/tool/execute_code.go), run as
# `python3 -c RUNNER` inside the session's environment. It reads one JSON
# line from stdin: {"dir", "token", "reply", "tools": {name: [params]},
# "code"}; creates a fresh 0700 directory <tempdir>/<dir> with a unix
# socket "s" in it; prints "\x1eHERMES_RPC <socket path>" on stdout; waits
# for hermes to connect and present {"token"} (other peers are refused),
# answers {"token": reply}, removes the socket and its directory (nobody
# else can connect from then on), and runs the script with a generated
# module hermes_tools whose functions call hermes's tools over that one
# connection, one JSON line each way per call.
import hmac
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import traceback
import types

_MAX_HELLO = 4096


def _listen(boot):
    d = os.path.join(tempfile.gettempdir(), boot["dir"])
    os.mkdir(d, 0o700)
    path = os.path.join(d, "s")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        srv.bind(path)
        srv.listen(8)
        sys.stdout.write("\x1eHERMES_RPC " + path + "\n")
        sys.stdout.flush()
        while True:
            c, _ = srv.accept()
            c.settimeout(10)
            try:
                hello = json.loads(c.makefile("rb").readline(_MAX_HELLO))
                token = hello.get("token") if isinstance(hello, dict) else None
                if isinstance(token, str) and hmac.compare_digest(token.encode(), boot["token"].encode()):
                    c.settimeout(None)
                    c.sendall((json.dumps({"token": boot["reply"]}) + "\n").encode())
                    return c
            except Exception:
                pass
            c.close()
    finally:
        srv.close()
        try:
            os.unlink(path)
        except OSError:
            pass
        try:
            os.rmdir(d)
        except OSError:
            pass


class _Conn:
    def __init__(self, sock):
        self._sock = sock
        self._file = sock.makefile("rb")
        self._lock = threading.Lock()
        self._next = 0

    def call(self, name, args):
        with self._lock:
            self._next += 1
            msg = json.dumps({"id": self._next, "tool": name, "args": args}) + "\n"
            try:
                self._sock.sendall(msg.encode())
                line = self._file.readline()
            except OSError as e:
                raise RuntimeError("hermes_tools: the connection to hermes is closed (%s)" % e)
            if not line:
                raise RuntimeError("hermes_tools: the connection to hermes is closed")
            reply = json.loads(line)
        content = reply.get("result", "")
        try:
            value = json.loads(content)
        except ValueError:
            value = content
        if reply.get("is_error") and not (isinstance(value, dict) and "error" in value):
            value = {"error": content}
        return value


def _tool(conn, name, params):
    def call(*args, **kwargs):
        if len(args) > len(params):
            raise TypeError("%s takes at most %d positional arguments" % (name, len(params)))
        for p, v in zip(params, args):
            if p in kwargs:
                raise TypeError("%s got two values for %s" % (name, p))
            kwargs[p] = v
        return conn.call(name, {k: v for k, v in kwargs.items() if v is not None})

    call.__name__ = name
    call.__doc__ = "hermes tool %s(%s); returns its result (parsed JSON when it is JSON)" % (name, ", ".join(params))
    return call


def _end_children():
    """Kills what the script started in the runner's process group (a
    subprocess.Popen child, `cmd &` in a shell), so nothing it left
    running outlives the call. The runner leads its group (the backend
    starts each command in a group or session of its own); when it does
    not, the group is the caller's and nothing is killed. A child that
    left the group (setsid, start_new_session) is not found here."""
    me = os.getpid()
    try:
        group = os.getpgrp()
    except OSError:
        return
    if group != me:
        return
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.getpgid(int(name)) == group:
                os.kill(int(name), signal.SIGKILL)
        except OSError:
            pass


def _main():
    boot = json.loads(sys.stdin.buffer.readline())
    sys.stdin.close()
    sys.stdin = open(os.devnull)
    try:
        sock = _listen(boot)
    except OSError as e:
        sys.stderr.write("execute_code: cannot create the tool socket: %s\n" % e)
        sys.exit(125)
    conn = _Conn(sock)
    mod = types.ModuleType("hermes_tools")
    mod.__all__ = sorted(boot["tools"])
    for name, params in boot["tools"].items():
        setattr(mod, name, _tool(conn, name, params))
    sys.modules["hermes_tools"] = mod
    code = boot["code"]
    del boot
    glb = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(code, "<execute_code>", "exec"), glb)
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.exit(1)
    finally:
        sys.stdout.flush()
        _end_children()


_main()
