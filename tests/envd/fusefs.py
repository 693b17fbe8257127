"""An empty, read-only FUSE filesystem served from a thread: the stand-in
for a network mount (envd treats FUSE like NFS/SMB when watching). Speaks
the raw /dev/fuse protocol (python3 stdlib only); needs root.

    m = EmptyFuse(dir)   # mounts, or raises OSError (no /dev/fuse, no root)
    ...
    m.close()            # lazy unmount, thread ends"""
import ctypes
import errno
import os
import struct
import threading

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2
IN_HDR = struct.Struct("<IIQQIIIHH")  # len opcode unique nodeid uid gid pid extlen pad
OUT_HDR = struct.Struct("<IiQ")       # len error unique
LOOKUP, FORGET, GETATTR, STATFS, INIT = 1, 2, 3, 17, 26
OPENDIR, READDIR, RELEASEDIR, ACCESS, INTERRUPT, BATCH_FORGET = 27, 28, 29, 34, 36, 42
NO_REPLY = (FORGET, BATCH_FORGET, INTERRUPT)


def _attr(ino):
    # fuse_attr: ino size blocks atime mtime ctime (u64), their nsecs,
    # mode nlink uid gid rdev blksize flags (u32)
    return struct.pack("<QQQQQQIIIIIIIIII", ino, 0, 0, 0, 0, 0, 0, 0, 0,
                       0o040755, 2, 0, 0, 0, 4096, 0)


class EmptyFuse:
    def __init__(self, target):
        self.target = target
        self.fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
        opts = "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other" % self.fd
        if _libc.mount(b"abxnet", target.encode(), b"fuse.abxnet",
                       MS_NOSUID | MS_NODEV, opts.encode()) != 0:
            e = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(e, "mount fuse on %s: %s" % (target, os.strerror(e)))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.dev = os.minor(os.stat(target).st_dev)  # answered by the thread

    def _reply(self, unique, err=0, data=b""):
        os.write(self.fd, OUT_HDR.pack(OUT_HDR.size + len(data), -err, unique) + data)

    def _serve(self):
        while True:
            try:
                req = os.read(self.fd, 1 << 20)
            except OSError as e:
                if e.errno in (errno.EINTR, errno.ENOENT):  # ENOENT: interrupted request
                    continue
                return  # ENODEV: unmounted
            if len(req) < IN_HDR.size:
                continue
            _, op, unique, node = IN_HDR.unpack_from(req)[:4]
            if op in NO_REPLY:
                continue
            try:
                if op == INIT:
                    # fuse_init_out, protocol 7.31, no optional capability
                    self._reply(unique, data=struct.pack(
                        "<IIIIHHIIHHII6I", 7, 31, 0, 0, 0, 0, 128 * 1024, 1, 0, 0,
                        0, 0, 0, 0, 0, 0, 0, 0))
                elif op == GETATTR:
                    self._reply(unique, data=struct.pack("<QII", 1, 0, 0) + _attr(node))
                elif op == STATFS:
                    self._reply(unique, data=struct.pack("<QQQQQIIII6I", 0, 0, 0, 0, 0,
                                                         4096, 255, 4096, 0, *[0] * 6))
                elif op == OPENDIR:
                    self._reply(unique, data=struct.pack("<QII", 1, 0, 0))
                elif op in (READDIR, RELEASEDIR, ACCESS):
                    self._reply(unique)  # READDIR: nothing, the end
                elif op == LOOKUP:
                    self._reply(unique, errno.ENOENT)
                else:
                    self._reply(unique, errno.ENOSYS)
            except OSError:
                pass  # the request was interrupted meanwhile

    def close(self):
        _libc.umount2(self.target.encode(), MNT_DETACH)
        try:  # a lazily unmounted connection may linger: end it
            with open("/sys/fs/fuse/connections/%d/abort" % self.dev, "w") as f:
                f.write("1")
        except OSError:
            pass
        self.thread.join(5)
        os.close(self.fd)
