# SPDX-License-Identifier: BSD-3-Clause
# BPF helpers for the integration tests that model a NIC or a peer with a BPF program:
# building a program with clang (skipping the test when it cannot), and reading the array map
# of a loaded program through the bpf() syscall (no bpftool needed; BPF object ids are global,
# so this works from any namespace).
import ctypes
import os
import shutil
import struct
import subprocess

import gwlib

_SYS_BPF = 321  # x86_64
_libc = ctypes.CDLL(None, use_errno=True)
(_MAP_LOOKUP_ELEM, _PROG_GET_FD_BY_ID, _MAP_GET_FD_BY_ID, _OBJ_GET_INFO_BY_FD) = (1, 13, 14, 15)


def build(src, obj, defines=()):
    """clang -O2 -g -target bpf; skips (exit 77) when no clang with the bpf target or the
    libbpf headers is there."""
    clang = shutil.which("clang") or shutil.which("clang-14")
    if not clang:
        gwlib.skip("no clang (or clang-14) to build the BPF program")
    multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True)
    inc = ["-I", f"/usr/include/{multiarch.stdout.strip()}"] if multiarch.returncode == 0 else []
    r = subprocess.run([clang, "-O2", "-g", "-target", "bpf"] + inc +
                       [f"-D{d}" for d in defines] + ["-c", src, "-o", obj],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        gwlib.skip(f"clang cannot build {os.path.basename(src)}: {r.stderr.strip()[-300:]}")
    return obj


def syscall(cmd, attr):
    """bpf(cmd, attr); returns its result or raises OSError."""
    buf = ctypes.create_string_buffer(attr, 128)
    r = _libc.syscall(_SYS_BPF, cmd, buf, 128)
    if r < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"bpf({cmd}): {os.strerror(err)}")
    return r


def prog_array_map(prog_id, entries):
    """The u64 values 0..entries-1 of the one map program `prog_id` uses (an array map with
    u32 keys)."""
    pfd = syscall(_PROG_GET_FD_BY_ID, struct.pack("<I", prog_id))
    try:
        ids = (ctypes.c_uint32 * 4)()
        info = ctypes.create_string_buffer(256)
        # struct bpf_prog_info: nr_map_ids at 52, map_ids (u64 pointer) at 56
        struct.pack_into("<IQ", info, 52, len(ids), ctypes.addressof(ids))
        syscall(_OBJ_GET_INFO_BY_FD, struct.pack("<IIQ", pfd, len(info), ctypes.addressof(info)))
        n, = struct.unpack_from("<I", info, 52)
    finally:
        os.close(pfd)
    if n != 1:
        gwlib.fail(f"BPF program {prog_id} uses {n} maps, expected 1")
    mfd = syscall(_MAP_GET_FD_BY_ID, struct.pack("<I", ids[0]))
    values = []
    try:
        key, value = ctypes.c_uint32(), ctypes.c_uint64()
        for k in range(entries):
            key.value = k
            syscall(_MAP_LOOKUP_ELEM, struct.pack("<IIQQQ", mfd, 0, ctypes.addressof(key),
                                                  ctypes.addressof(value), 0))
            values.append(value.value)
    finally:
        os.close(mfd)
    return values
