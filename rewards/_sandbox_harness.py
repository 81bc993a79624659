# Runs inside the sandbox (as `python -I -S -c <this source>`), before and around the untrusted program.
# Trusted part: read the job; in fresh namespaces mount private tmpfs and drop to the sandbox uid (done here, not
# by `sh`/`mount`/`setpriv` processes: four fewer execs per program); set limits; precompile the tests; snapshot
# builtins; seal introspection.
# Then: setup + program in one namespace; each test in a copy of it with pristine builtins; after each test
# that ran to its end without raising, write "<nonce> <index>" to the report pipe. Nothing the program prints counts.
import builtins
import json
import os
import resource
import sys


def enter_private_filesystem(mounts: list[str], size: int, uid: int | None) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for target in mounts:
        if libc.mount(b"tmpfs", target.encode(), b"tmpfs", 0, f"size={size},mode=1777".encode()) != 0:
            raise OSError(ctypes.get_errno(), f"mount tmpfs on {target}")
    os.chdir(mounts[0])
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def main():
    job = json.loads(sys.stdin.read())
    sys.stdin.close()
    if job["mounts"]:
        enter_private_filesystem(job["mounts"], job["tmpfs_bytes"], job["uid"])
    limits = job["limits"]
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))
    nonce = job["nonce"].encode()
    write, report_fd = os.write, job["report_fd"]
    tests = job["tests"]
    compiled_tests = [compile(test, f"<test {i}>", "exec") for i, test in enumerate(tests)]
    program = compile(job["program"], "<program>", "exec")
    setup = compile(job["setup"], "<setup>", "exec")
    pristine = dict(vars(builtins))
    run, copy_namespace = exec, dict
    blocked_attributes = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "f_locals"})

    def seal(event, args):
        # The nonce lives in this frame only: deny every way of reaching another frame's locals or all objects.
        if event == "sys._getframe":
            raise ValueError("sandbox: frame introspection is not allowed")  # what stdlib callers already catch
        if event == "object.__getattr__" and args[1] in blocked_attributes or event.startswith(
            ("gc.", "sys._current_frames", "sys.settrace", "sys.setprofile", "ctypes", "sys.addaudithook",
             "cpython.PyInterpreterState", "sys.monitoring")
        ) or event == "open" and isinstance(args[0], str) and args[0].startswith("/proc/"):
            raise RuntimeError(f"sandbox: {event} is not allowed")

    sys.addaudithook(seal)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        run(setup, namespace)
        run(program, namespace)
    except BaseException as error:  # noqa: BLE001 - a program that raises or exits while loading passes no test
        write(2, f"program failed to load: {type(error).__name__}: {error}"[:1000].encode(errors="replace"))
        return
    for index, code in enumerate(compiled_tests):
        test_namespace = copy_namespace(namespace)
        test_namespace["__builtins__"] = copy_namespace(pristine)
        try:
            run(code, test_namespace)
        except BaseException:  # noqa: BLE001 - SystemExit from a tested function fails that test
            continue
        write(report_fd, b"%s %d\n" % (nonce, index))


if __name__ == "__main__":
    main()
