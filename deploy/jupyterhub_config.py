# JupyterHub configuration for a GradLab classroom on one machine (Debian 12's jupyterhub 3.0).
#
# Started by `gradlab classroom` (kernel/cli/classroom.ts), which sets the GRADLAB_CLASS_* variables
# below; it can also be used directly: `GRADLAB_CLASS_PASSWORD=... jupyterhub -f deploy/jupyterhub_config.py`.
#
# What it sets up:
# - a shared-password login for a fixed list of students (a workshop has no accounts to federate); each
#   student is a local Unix user, created on first start, with a private home (mode 0700);
# - the student's own JupyterLab 4 (the venv deploy/setup makes from the wheels the browser tier uses) with
#   the GradLab kernel as the default, running as that user;
# - the course notebooks copied into ~/course on every start, file by file, never over an existing file;
# - per student: a memory cap and a CPU share/limit enforced by cgroups, GradLab's device capacity
#   (GRADLAB_DEVICE_MEMORY) under that cap, and idle culling of kernels and servers by jupyter_server.
import ctypes
import hmac
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from jupyterhub.auth import LocalAuthenticator
from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Unicode

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)

REPO = Path(os.environ.get("GRADLAB_REPO") or Path(__file__).resolve().parent.parent)
VENV = Path(os.environ.get("GRADLAB_CLASSROOM_VENV", "/opt/gradlab-classroom/venv"))
STATE = Path(os.environ.get("GRADLAB_CLASS_STATE", "/var/lib/gradlab-classroom"))
CHP = os.environ.get(
    "GRADLAB_CLASS_PROXY", "/opt/gradlab-classroom/chp/node_modules/.bin/configurable-http-proxy"
)


def env_int(name, default):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        sys.exit(f"jupyterhub_config: {name}={raw!r} is not an integer")


def env_float(name, default):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        sys.exit(f"jupyterhub_config: {name}={raw!r} is not a number")


# ---- students -------------------------------------------------------------------------------------
def student_names():
    listed = os.environ.get("GRADLAB_CLASS_USERS", "").strip()
    if listed and not listed.isdigit():
        names = [n.strip() for n in listed.split(",") if n.strip()]
    else:
        count = int(listed or "30")
        prefix = os.environ.get("GRADLAB_CLASS_PREFIX", "student")
        names = [f"{prefix}{i:02d}" for i in range(1, count + 1)]
    for n in names:
        # useradd's own rule (NAME_REGEX): lower case, digits, '-', '_'; a leading letter
        if not (n[:1].isalpha() and n.islower() and all(ch.isalnum() or ch in "-_" for ch in n) and len(n) <= 32):
            sys.exit(f"jupyterhub_config: {n!r} is not a valid Unix user name")
    return names


STUDENTS = student_names()
PASSWORD = os.environ.get("GRADLAB_CLASS_PASSWORD", "")
if len(PASSWORD) < 8:
    sys.exit("jupyterhub_config: set GRADLAB_CLASS_PASSWORD (at least 8 characters) for the class login")


class SharedPasswordAuthenticator(LocalAuthenticator):
    """Every student on the list logs in with the class's shared password; a workshop hands out one
    password on the board. Students are still separate Unix users (LocalAuthenticator creates them),
    so file permissions and cgroups keep them apart."""

    password = Unicode(config=True, help="The class's shared password")

    async def authenticate(self, handler, data):
        name = self.normalize_username((data or {}).get("username", ""))
        given = (data or {}).get("password", "")
        # constant-time comparison, as for any secret
        if name in self.allowed_users and hmac.compare_digest(given.encode(), self.password.encode()):
            return name
        self.log.warning("Failed login for %r", name)
        return None


c.JupyterHub.authenticator_class = SharedPasswordAuthenticator
c.SharedPasswordAuthenticator.password = PASSWORD
c.Authenticator.allowed_users = set(STUDENTS)
admins = {n.strip() for n in os.environ.get("GRADLAB_CLASS_ADMINS", "").split(",") if n.strip()}
c.Authenticator.admin_users = admins
c.LocalAuthenticator.create_system_users = True
# A private home (0700): students cannot list or read each other's work or kernel connection files.
# No login shell: the accounts exist only to run each student's server under their own uid.
c.LocalAuthenticator.add_user_cmd = ["useradd", "--create-home", "-K", "HOME_MODE=0700", "--shell", "/usr/sbin/nologin"]

# ---- network --------------------------------------------------------------------------------------
# Loopback unless told otherwise: put a TLS-terminating proxy in front (docs/classroom.md) rather than
# exposing plain HTTP, where the shared password would travel in clear text.
c.JupyterHub.ip = os.environ.get("GRADLAB_CLASS_IP", "127.0.0.1")
c.JupyterHub.port = env_int("GRADLAB_CLASS_PORT", 8000)
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = env_int("GRADLAB_CLASS_HUB_PORT", 8081)
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{env_int('GRADLAB_CLASS_PROXY_API_PORT', 8001)}"
c.ConfigurableHTTPProxy.command = [CHP]
c.ConfigurableHTTPProxy.should_start = True
c.JupyterHub.cleanup_servers = True  # stop students' servers with the hub (a workshop ends with it)

STATE.mkdir(parents=True, exist_ok=True, mode=0o700)
os.chmod(STATE, 0o700)  # the database and cookie secret are secrets
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")

# ---- the students' servers ------------------------------------------------------------------------
MEM_LIMIT = env_int("GRADLAB_CLASS_MEM", 1536 * 2**20)  # bytes
CPU_LIMIT = env_float("GRADLAB_CLASS_CPU", 1.0)  # cores one student may use at most
# GradLab's device is host memory under lavapipe: keep its capacity well under the cgroup cap so a
# student's tensors hit GradLab's own "out of memory" error (their kernel survives) before the
# kernel's process hits the cgroup limit.
DEVICE_MEMORY = env_int("GRADLAB_CLASS_DEVICE_MEMORY", MEM_LIMIT // 4)
# a private /tmp and /dev/shm per student (tmpfs, in the student's own mount namespace): what they write
# there is memory charged to their own cgroup, so it cannot fill the machine's disk or another's /tmp
TMP_SIZE = env_int("GRADLAB_CLASS_TMP_SIZE", 256 * 2**20)  # bytes, each of /tmp and /dev/shm
# memory kept for the hub, the proxy and the system: every student's cgroup sits under one parent
# cgroup capped at (machine memory - RESERVE), and the hub and proxy are the OOM killer's last choice
RESERVE = env_int("GRADLAB_CLASS_RESERVE", 1024 * 2**20)  # bytes
# admission: at most this many servers at once; the next student gets "the class is full"
# (templates/error.html) instead of a spawn that times out. Default: as many as fit when each uses
# ADMIT bytes: the measured peak of one student working through the whole course with three notebooks
# (three kernels) open, 1018 MiB charged to their cgroup (docs/classroom.md), under the cap MEM_LIMIT.
ADMIT = env_int("GRADLAB_CLASS_ADMIT_MEM", 1024 * 2**20)  # bytes
KERNEL_IDLE = env_int("GRADLAB_CLASS_KERNEL_IDLE", 30 * 60)  # seconds
SERVER_IDLE = env_int("GRADLAB_CLASS_SERVER_IDLE", 60 * 60)  # seconds
if DEVICE_MEMORY >= MEM_LIMIT:
    sys.exit("jupyterhub_config: GRADLAB_CLASS_DEVICE_MEMORY must be below GRADLAB_CLASS_MEM")

def machine_memory():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


if TMP_SIZE:
    # a private /tmp needs a mount namespace (CAP_SYS_ADMIN): where the hub cannot make one, say so and
    # share the machine's /tmp rather than fail every student's start
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        print(
            "jupyterhub_config: cannot make mount namespaces here "
            f"({probe.stderr.decode().strip() or probe.returncode}); students share the machine's /tmp",
            file=sys.stderr,
        )
        TMP_SIZE = 0

# a disk limit per student: each home is an ext4 file system of its own, in a sparse image file under
# STATE/homes, loop-mounted on the home while the student's server runs. A student who fills it gets
# ENOSPC in their own home; the file system holding /home, and every other student, are untouched.
# (Quotas would do the same, but need the machine's file system mounted with usrquota, which a class
# set-up should not change.) 0: plain homes, no limit.
HOME_SIZE = env_int("GRADLAB_CLASS_HOME_SIZE", 1024 * 2**20)  # bytes per student
if HOME_SIZE:
    probe = subprocess.run(["losetup", "--find"], capture_output=True)
    if probe.returncode != 0:
        print(
            "jupyterhub_config: no loop devices here "
            f"({probe.stderr.decode().strip() or probe.returncode}); homes have no disk limit",
            file=sys.stderr,
        )
        HOME_SIZE = 0
    else:
        free = shutil.disk_usage(STATE).free
        if HOME_SIZE * len(STUDENTS) > free:
            # the images are sparse: they take only what students write, but if all of them filled
            # theirs, the file system holding STATE would fill first
            print(
                f"jupyterhub_config: {len(STUDENTS)} homes of {HOME_SIZE >> 20} MiB exceed the "
                f"{free >> 20} MiB free under {STATE}: each student is still limited, all together are not",
                file=sys.stderr,
            )

MACHINE_MEM = machine_memory()
if MACHINE_MEM and RESERVE >= MACHINE_MEM:
    sys.exit("jupyterhub_config: GRADLAB_CLASS_RESERVE must be below this machine's memory")
MAX_ACTIVE = env_int("GRADLAB_CLASS_MAX_ACTIVE", max(1, (MACHINE_MEM - RESERVE) // ADMIT) if MACHINE_MEM else 0)

# The hub and (inheriting it when the hub starts it) the proxy: the OOM killer's last choice. Students'
# servers are set back to a positive score before they run (ClassroomSpawner.make_preexec_fn).
try:
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("-900")
except OSError as e:
    # lowering a score needs CAP_SYS_RESOURCE, which some containers drop: the students' +500 still
    # puts their processes first
    print(f"jupyterhub_config: cannot lower the hub's OOM score ({e.strerror}); students' servers still go first", file=sys.stderr)

COURSE_SRC = REPO / "notebooks"
COURSE_DIR = "course"


def cgroup_base(controller):
    """This process's own cgroup (v1) for a controller, so classroom cgroups nest under whatever limits
    the hub itself runs in; None when that controller is not mounted or not writable."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controller in controllers.split(","):
                base = Path("/sys/fs/cgroup") / controller / path.lstrip("/") / "gradlab-classroom"
                base.mkdir(exist_ok=True)
                if controller == "memory" and MACHINE_MEM:
                    # all students together leave RESERVE for the hub, the proxy and the system
                    (base / "memory.limit_in_bytes").write_text(str(MACHINE_MEM - RESERVE))
                return base
    except OSError:
        return None
    return None


_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNS = 0x00020000
_MS_REC = 0x4000
_MS_BIND = 0x1000
_MS_PRIVATE = 1 << 18
_MS_NOSUID = 2
_MS_NODEV = 4
_MNT_DETACH = 2


def _check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def private_tmp(size, others=frozenset()):
    """In the spawned child, before exec: a mount namespace of its own whose /tmp and /dev/shm are
    fresh tmpfs of `size` bytes each (Python 3.11 has no os.unshare; libc does the same)."""
    _check(_libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    # mounts made here must not propagate back to the machine's namespace
    _check(_libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")
    # the other students' homes (ext4 images) need not stay mounted here: a copy in this namespace
    # would keep each one's file system alive after their own server stopped
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        if point in others:
            _libc.umount2(point.encode(), _MNT_DETACH)
    for target in (b"/tmp", b"/dev/shm"):
        if os.path.isdir(target):
            # a GradLab checkout under /tmp (a CI clone) must stay visible: the kernelspec runs its dist/.
            # Keep a handle on it, and bind it back into the fresh tmpfs at the same path.
            repo = str(REPO)
            keep = os.open(repo, os.O_PATH) if repo.startswith(target.decode() + "/") else None
            opts = f"size={size},mode=1777".encode()
            _check(_libc.mount(b"tmpfs", target, b"tmpfs", _MS_NOSUID | _MS_NODEV, opts), f"mount tmpfs on {target.decode()}")
            if keep is not None:
                os.makedirs(repo, exist_ok=True)
                _check(_libc.mount(f"/proc/self/fd/{keep}".encode(), repo.encode(), None, _MS_BIND | _MS_REC, None), f"bind {repo}")
                os.close(keep)


def _run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {(r.stderr or r.stdout).strip()}")
    return r.stdout


def home_image(user):
    return STATE / "homes" / f"{user.pw_name}.ext4"


def attached_loop(image):
    """The loop device that still backs the image, if any: the home of a server that stopped stays
    mounted in any mount namespace that copied it (another student's server started meanwhile, a
    straggler), and is mounted again from that same device, so that there is only ever one ext4
    instance of the image (two would corrupt it)."""
    out = _run(["losetup", "--associated", str(image)]).strip()
    return out.split(":", 1)[0] if out else None


def mount_home(user):
    """Loop-mounts the student's home image on their home (made on first use from what the home holds,
    so an account that existed before keeps its files). Idempotent: a mounted home is left as it is."""
    home = user.pw_dir
    if os.path.ismount(home):
        return
    image = home_image(user)
    image.parent.mkdir(mode=0o700, exist_ok=True)
    if not image.exists():
        with open(image, "wb") as f:
            f.truncate(HOME_SIZE)  # sparse: the disk holds only what the student writes
        # -d: the home's current files; -m 0: no blocks reserved for root (nobody else writes there)
        try:
            _run(["mkfs.ext4", "-q", "-F", "-m", "0", "-d", home, "-E", f"root_owner={user.pw_uid}:{user.pw_gid}", str(image)])
        except RuntimeError:
            image.unlink()  # (a home bigger than --home-size): no half-made image for the next start
            raise
    loop = attached_loop(image)
    try:
        _run(["mount", "-o", "nosuid,nodev", loop, home] if loop else ["mount", "-o", "loop,nosuid,nodev", str(image), home])
    except RuntimeError:
        if not loop:
            raise
        # its last holder let go between the two calls (the device cleared itself): a fresh loop
        _run(["mount", "-o", "loop,nosuid,nodev", str(image), home])
    os.chown(home, user.pw_uid, user.pw_gid)
    os.chmod(home, 0o700)


def unmount_home(user):
    """After the student's server stopped; lazily if something still holds it (the loop device is freed
    when that goes; mount_home reuses it meanwhile)."""
    home = user.pw_dir
    if os.path.ismount(home) and subprocess.run(["umount", home], capture_output=True).returncode != 0:
        subprocess.run(["umount", "--lazy", home], capture_output=True)


class ClassroomSpawner(LocalProcessSpawner):
    """LocalProcessSpawner that also enforces mem_limit/cpu_limit (the base class only advertises them)
    with a cgroup per student, and copies the course in before each start."""

    def _cgroup_dirs(self):
        dirs = []
        mem = cgroup_base("memory")
        if mem is not None:
            d = mem / self.user.name
            d.mkdir(exist_ok=True)
            (d / "memory.limit_in_bytes").write_text(str(int(self.mem_limit)))
            dirs.append(d)
        cpu = cgroup_base("cpu")
        if cpu is not None:
            d = cpu / self.user.name
            d.mkdir(exist_ok=True)
            # equal weights: under contention every student gets the same share of the machine
            (d / "cpu.shares").write_text("1024")
            period = int((d / "cpu.cfs_period_us").read_text())
            (d / "cpu.cfs_quota_us").write_text(str(int(period * self.cpu_limit)))
            dirs.append(d)
        return dirs

    def make_preexec_fn(self, name):
        drop_privileges = super().make_preexec_fn(name)
        procs = [str(d / "cgroup.procs") for d in self._cgroups]

        tmp_size = TMP_SIZE
        others = set()
        if HOME_SIZE:
            for n in STUDENTS:
                try:
                    if n != name:
                        others.add(pwd.getpwnam(n).pw_dir)
                except KeyError:
                    pass  # not created yet

        def preexec():
            # join the student's cgroups while still root, before exec: every kernel the server starts
            # inherits them, with no window in which a child runs outside
            for p in procs:
                with open(p, "w") as f:
                    f.write(str(os.getpid()))
            # the student's processes go before the hub's when memory runs out
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("500")
            if tmp_size:
                private_tmp(tmp_size, others)
            drop_privileges()

        return preexec

    def copy_course(self):
        user = pwd.getpwnam(self.user.name)
        if HOME_SIZE:
            mount_home(user)
        home = Path(user.pw_dir)
        os.chmod(home, 0o700)  # also for accounts that existed before the classroom
        dest = home / COURSE_DIR
        if not dest.exists():
            dest.mkdir(mode=0o755)
            os.chown(dest, user.pw_uid, user.pw_gid)
        wanted = sorted(COURSE_SRC.glob("*.ipynb")) + [COURSE_SRC / "check.ts"]
        for src in wanted:
            target = dest / src.name
            # a fresh copy only where the student has none: their edits are never overwritten; a
            # deleted notebook comes back fresh on the next start
            if target.exists() or target.is_symlink():
                continue
            shutil.copyfile(src, target)
            os.chown(target, user.pw_uid, user.pw_gid)

    async def start(self):
        self.copy_course()
        self._cgroups = self._cgroup_dirs()
        if not self._cgroups:
            self.log.warning("No writable cgroups: %s runs without a memory cap or CPU limit", self.user.name)
        return await super().start()

    async def stop(self, now=False):
        await super().stop(now=now)
        if HOME_SIZE:
            unmount_home(pwd.getpwnam(self.user.name))
        # an empty cgroup can go; one that still holds a straggler stays (rmdir refuses), and is reused
        for d in getattr(self, "_cgroups", []):
            try:
                d.rmdir()
            except OSError:
                pass


def runtime_dir(home):
    """Jupyter's usual runtime directory in the home, unless the kernels' Unix socket paths would not fit
    there: <dir>/kernel-<36-character id>-ipc-<n> must stay under the 107 bytes of sun_path (a long
    home path or user name); then a short one, still in the private home."""
    usual = os.path.join(home, ".local/share/jupyter/runtime")
    if len(os.path.join(usual, "kernel-" + "0" * 36 + "-ipc-10").encode()) < 100:
        return usual
    return os.path.join(home, ".jr")


c.JupyterHub.spawner_class = ClassroomSpawner
c.Spawner.mem_limit = MEM_LIMIT
c.Spawner.cpu_limit = CPU_LIMIT
c.Spawner.cmd = [str(VENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~/" + COURSE_DIR
c.Spawner.http_timeout = env_int("GRADLAB_CLASS_HTTP_TIMEOUT", 120)  # 30 servers starting on 2 cores
c.Spawner.start_timeout = env_int("GRADLAB_CLASS_START_TIMEOUT", 180)
c.Spawner.args = [
    "--MappingKernelManager.default_kernel_name=gradlab",
    # kernel channels as Unix sockets in the student's private runtime directory (0700, in a 0700
    # home), not TCP ports on 127.0.0.1 that every local account can connect to
    "--KernelManager.transport=ipc",
    # students see the GradLab kernel only (the venv's ipykernel is JupyterLab's, not the course's)
    "--KernelSpecManager.ensure_native_kernel=False",
    "--KernelSpecManager.allowed_kernelspecs=gradlab",
    # jupyter_server's own culling: an idle kernel is shut down, then an idle server stops itself
    f"--MappingKernelManager.cull_idle_timeout={KERNEL_IDLE}",
    "--MappingKernelManager.cull_interval=60",
    "--MappingKernelManager.cull_connected=True",
    f"--ServerApp.shutdown_no_activity_timeout={SERVER_IDLE}",
    # no terminals: the accounts have no shell on purpose
    "--ServerApp.terminals_enabled=False",
]
c.Spawner.environment = {
    "PATH": f"{VENV / 'bin'}:{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
    "GRADLAB_DEVICE_MEMORY": str(DEVICE_MEMORY),
    # kernel connection files (which hold each kernel's HMAC key) in the private home, not /tmp
    "JUPYTER_RUNTIME_DIR": lambda spawner: runtime_dir(pwd.getpwnam(spawner.user.name).pw_dir),
    "NODE_NO_WARNINGS": "1",
}
# this class's own kernelspec (gradlab classroom writes it, naming the GradLab it runs from), searched
# before the venv's: a class started from another checkout never repoints this one's kernels
if os.environ.get("GRADLAB_CLASS_JUPYTER_PATH"):
    c.Spawner.environment["JUPYTER_PATH"] = os.environ["GRADLAB_CLASS_JUPYTER_PATH"]

# The hub's own API for the class simulation and tests: none by default. `gradlab classroom
# --api-token` registers a service with admin rights on users and servers, for scripted classes.
api_token = os.environ.get("GRADLAB_CLASS_API_TOKEN")
if api_token:
    c.JupyterHub.services = [{"name": "gradlab-classroom", "api_token": api_token}]
    c.JupyterHub.load_roles = [
        {
            "name": "gradlab-classroom",
            "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "read:metrics"],
            "services": ["gradlab-classroom"],
        }
    ]

# Bounded: a hub that cannot reach its proxy or a spawner stuck for minutes should fail, not hang.
c.JupyterHub.init_spawners_timeout = 30
c.JupyterHub.concurrent_spawn_limit = env_int("GRADLAB_CLASS_CONCURRENT_SPAWNS", 100)
c.JupyterHub.active_server_limit = MAX_ACTIVE
# "The class is full" instead of a bare 429 (templates/error.html extends the hub's own page)
c.JupyterHub.template_paths = [str(Path(__file__).resolve().parent / "templates")]
c.JupyterHub.template_vars = {"class_size": MAX_ACTIVE}
