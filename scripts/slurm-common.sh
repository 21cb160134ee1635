# Shared by scripts/slurm-up.sh (one node) and scripts/cluster-up.sh (several nodes as network
# namespaces): installing Debian's Slurm, a private munged, daemon pid files, waiting for nodes.
# Sourced, not run. The caller sets DIR (its scratch folder), ME (its name for messages) and
# CONF (its slurm.conf), and exports SLURM_CONF.

SLURM_PACKAGES=(munge slurmctld slurmd slurm-client libpmix-dev)

say() { echo "$ME: $*" >&2; }

alive() {  # alive PIDFILE: the process named in the file runs (a zombie does not: where init
    # does not reap, a dead daemon stays in the process table and answers kill -0)
    local pid state
    pid=$(cat "$1" 2>/dev/null) || return 1  # the daemon may remove it as we read
    [[ -n $pid ]] || return 1
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ -n $state && $state != Z ]]
}

stop_pidfile() {  # stop_pidfile PIDFILE: SIGTERM, 5 s grace, then SIGKILL (slurmd may hang on munge)
    if alive "$1"; then
        kill "$(cat "$1" 2>/dev/null)" 2>/dev/null || true
        for _ in $(seq 50); do alive "$1" || break; sleep 0.1; done  # slurmd may take seconds
        if alive "$1"; then kill -9 "$(cat "$1" 2>/dev/null)" 2>/dev/null || true; fi
    fi
    rm -f "$1"
}

install_slurm() {  # exit 3: not installed and cannot be (not root, no apt-get)
    local missing=()
    command -v slurmctld >/dev/null || missing+=(slurmctld)
    command -v slurmd >/dev/null || missing+=(slurmd)
    command -v munged >/dev/null || missing+=(munge)
    command -v srun >/dev/null || missing+=(slurm-client)
    # Slurm's pmix plugin dlopens the unversioned libpmix.so (Open MPI needs --mpi=pmix).
    ls /usr/lib/*/libpmix.so >/dev/null 2>&1 || missing+=(libpmix-dev)
    ((${#missing[@]} == 0)) && return 0
    if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
        say "Slurm is not installed (missing: ${missing[*]}) and this is not root on Debian:"
        say "install ${SLURM_PACKAGES[*]} with the distribution's package manager"
        exit 3
    fi
    say "installing ${SLURM_PACKAGES[*]} (about a minute)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${SLURM_PACKAGES[@]}" >"$DIR/apt.log" 2>&1 ||
        { apt-get update -q >>"$DIR/apt.log" 2>&1 &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${SLURM_PACKAGES[@]}" >>"$DIR/apt.log" 2>&1; } ||
        { say "apt-get failed, see $DIR/apt.log"; exit 1; }
}

start_munge() {  # a munged of our own: private key and socket under $DIR/munge
    local m=$DIR/munge
    mkdir -p "$m"
    chmod 0711 "$DIR" "$m"  # clients of other users must reach the socket
    if [[ ! -s $m/munge.key ]]; then
        dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
    fi
    chmod 0400 "$m/munge.key"
    alive "$m/munged.pid" && return 0
    rm -f "$m/munge.socket.2" "$m/munge.socket.2.lock"
    munged --force --socket="$m/munge.socket.2" --key-file="$m/munge.key" \
        --pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munge.seed"
}

conf_common() {  # conf_common CTLD_PORT SLURMD_PORT SRUN_PORTS: the lines both clusters share
    local user
    user=$(id -un)
    cat <<CONF
ClusterName=colltune
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket.2
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldPort=$1
SlurmdPort=$2
SrunPortRange=$3
StateSaveLocation=$DIR/state
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmctldLogFile=$DIR/slurmctld.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
CONF
}

install_conf() {  # install_conf NEWFILE: 0 unchanged, 1 replaced (the daemons must restart)
    if [[ -f $CONF ]] && cmp -s "$CONF" "$1"; then
        rm "$1"
        return 0
    fi
    mv "$1" "$CONF"
    return 1
}

wait_idle() {  # wait_idle N: until N nodes are idle (or allocated), 30 s at most
    local states="" ready
    for _ in $(seq 150); do
        states=$(timeout 5 sinfo -h -N -o '%N=%T' 2>/dev/null | sort -u | tr '\n' ' ' || true)
        ready=$(tr ' ' '\n' <<<"$states" | grep -cE '=(idle|mix|alloc)' || true)
        ((ready >= $1)) && return 0
        sleep 0.2
    done
    say "the nodes did not come up (states: ${states:-none reported}); logs in $DIR"
    return 1
}
