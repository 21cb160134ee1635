#!/usr/bin/env bash
# A real multi-node Slurm cluster on this one machine (Debian 12: Slurm 22.05), for colltune's
# tests and benchmarks across nodes.
#
#   scripts/cluster-up.sh [--nodes N] [--delay-us D]   start (idempotent); N nodes, default 2
#   scripts/cluster-up.sh --stop                       stop the daemons, remove the namespaces
#
# Each node is a Linux network + UTS namespace `ctnodeK` with its own hostname (ctnodeK) and
# address (<net>.1K on a bridge `ctbr0`, the host side is <net>.1), running Debian's own slurmd;
# slurmctld and munged run on the host. The file system is shared, so binaries, the build cache
# and output folders are the same on every node; MPI libraries decide "same node" by hostname
# and Slurm's node list, so ranks on different nodes talk over TCP across the bridge (a veth
# pair per node: the wire is the only emulated part). `--delay-us D` adds a netem delay of D us
# on every node's link (both directions: a round trip gets 2*D more; default 0, see
# docs/cluster.md); it needs the kernel's netem qdisc (sch_netem), which is checked before
# anything is changed (exit 7 without it). Slurm's MpiDefault stays `none`, like most sites:
# give srun --mpi=.
#
# Everything lives in $COLLTUNE_CLUSTER_DIR (default /tmp/colltune-cluster); use it with
#   export SLURM_CONF=$COLLTUNE_CLUSTER_DIR/slurm.conf
# Its ports (COLLTUNE_CLUSTER_CTLD_PORT 16827, _SLURMD_PORT 16828, _SRUN_PORTS 17000-17099) and
# the bridge network (COLLTUNE_CLUSTER_NET, first three octets, default 10.77.0) differ from
# scripts/slurm-up.sh's, so both clusters can run at once.
#
# Exit codes: 0 up; 1 failed to start (logs named); 2 usage; 3 Slurm not installed and cannot
# be (not root); 4 not root (namespaces, veths and a bridge need root); 5 network namespaces,
# veth pairs, bridges or UTS namespaces unavailable here (a container without them);
# 6 the bridge network is already in use on this host (choose another COLLTUNE_CLUSTER_NET);
# 7 --delay-us given but this kernel has no netem qdisc (nothing was changed).
set -euo pipefail

DIR=${COLLTUNE_CLUSTER_DIR:-/tmp/colltune-cluster}
CTLD_PORT=${COLLTUNE_CLUSTER_CTLD_PORT:-16827}
SLURMD_PORT=${COLLTUNE_CLUSTER_SLURMD_PORT:-16828}
SRUN_PORTS=${COLLTUNE_CLUSTER_SRUN_PORTS:-17000-17099}
NET=${COLLTUNE_CLUSTER_NET:-10.77.0}
BRIDGE=ctbr0
PREFIX=ctnode  # namespace, hostname and Slurm node name of node K: ctnodeK
CONF=$DIR/slurm.conf
ME=cluster-up
export SLURM_CONF=$CONF
# shellcheck source=scripts/slurm-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/slurm-common.sh"

usage() {
    sed -n '2,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

NODES=2
DELAY_US=0
STOP=0
while (($#)); do
    case $1 in
        --nodes) NODES=${2:-}; shift 2 || usage ;;
        --nodes=*) NODES=${1#*=}; shift ;;
        --delay-us) DELAY_US=${2:-}; shift 2 || usage ;;
        --delay-us=*) DELAY_US=${1#*=}; shift ;;
        --stop) STOP=1; shift ;;
        -h|--help) usage ;;
        *) say "unknown argument '$1'"; usage ;;
    esac
done
[[ $NODES =~ ^[1-9][0-9]?$ ]] && ((NODES <= 80)) ||
    { say "--nodes takes 1 to 80 (addresses $NET.11-$NET.90), not '$NODES'"; exit 2; }
[[ $DELAY_US =~ ^[0-9]+$ ]] || { say "--delay-us takes a whole number of microseconds, not '$DELAY_US'"; exit 2; }
[[ $NET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
    { say "COLLTUNE_CLUSTER_NET is the first three octets of a /24 (like 10.77.0), not '$NET'"; exit 2; }

node_addr() { echo "$NET.$((10 + $1))"; }

# ---- the network: a bridge on the host, a namespace and a veth pair per node --------------

our_namespaces() { ip netns list 2>/dev/null | awk -v p="^$PREFIX[0-9]+$" '$1 ~ p {print $1}'; }

remove_node_net() {  # remove_node_net NAME: its veth (both ends go), namespace, /etc/netns files
    local k=${1#"$PREFIX"}
    ip link del "ctv$k" 2>/dev/null || true
    ip netns del "$1" 2>/dev/null || true
    rm -rf "/etc/netns/$1"
}

stop_net() {
    local ns
    for ns in $(our_namespaces); do remove_node_net "$ns"; done
    rmdir /etc/netns 2>/dev/null || true  # only if empty: made by the first node, nobody else's
    # the bridge is ours only if it carries our address (never touch anyone else's interface)
    if ip -4 addr show dev "$BRIDGE" 2>/dev/null | grep -q "inet $NET.1/24"; then
        ip link del "$BRIDGE" || say "could not remove the bridge $BRIDGE"
    fi
}

net_check() {  # the capabilities this needs, each with its own message and exit code
    if [[ $(id -u) != 0 ]]; then
        say "network namespaces, veth pairs and a bridge need root (this is $(id -un));"
        say "run as root, or use scripts/slurm-up.sh for a one-node cluster"
        exit 4
    fi
    local missing=()
    command -v ip >/dev/null || missing+=(iproute2)
    command -v unshare >/dev/null || missing+=(util-linux)
    if ((${#missing[@]})); then
        if command -v apt-get >/dev/null; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >>"$DIR/apt.log" 2>&1 ||
                { say "apt-get install ${missing[*]} failed, see $DIR/apt.log"; exit 1; }
        else
            say "needs ${missing[*]} (ip, unshare)"; exit 5
        fi
    fi
    # the bridge network must be ours alone: a route to it through another device means a clash
    local via
    via=$(ip -4 route show "$NET.0/24" 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") print $(i + 1)}')
    if [[ -n $via && $via != "$BRIDGE" ]]; then
        say "the network $NET.0/24 is already routed through $via on this host;"
        say "choose a free one with COLLTUNE_CLUSTER_NET (first three octets, e.g. 10.78.0)"
        exit 6
    fi
}

netem_check() {  # --delay-us: netem must exist, found out in a scratch namespace before any change
    ((DELAY_US == 0)) && return 0
    local probe=ctprobe$$ err
    ip netns add "$probe" 2>"$DIR/net.err" || unavailable "network namespaces"
    err=$({ ip -n "$probe" link set lo up && tc -n "$probe" qdisc add dev lo root netem delay 1us; } 2>&1) || true
    ip netns del "$probe" 2>/dev/null || true
    [[ -z $err ]] && return 0
    say "--delay-us needs the kernel's netem queueing discipline (sch_netem), and this kernel"
    say "(Linux $(uname -r)) has none: tc says '$(echo "$err" | head -1)'. Nothing was changed."
    say "Start without --delay-us (the bridge is already 30-50x slower than shared memory here:"
    say "docs/cluster.md, \"The wire\"), or use a kernel with CONFIG_NET_SCH_NETEM (modprobe sch_netem)"
    exit 7
}

unavailable() {  # unavailable WHAT: a kernel or container without the feature
    say "$1 unavailable here ($(tr '\n' ' ' <"$DIR/net.err" | cut -c1-300)):"
    say "this needs a kernel with network and UTS namespaces, veth and bridge support, and the"
    say "CAP_SYS_ADMIN and CAP_NET_ADMIN capabilities (a privileged container, or the host);"
    say "\`$0 --stop\` removes whatever part of the network was made"
    exit 5
}

start_bridge() {
    if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
        ip link add "$BRIDGE" type bridge 2>"$DIR/net.err" || unavailable "a Linux bridge"
    fi
    ip -4 addr show dev "$BRIDGE" | grep -q "inet $NET.1/24" ||
        ip addr add "$NET.1/24" dev "$BRIDGE" 2>"$DIR/net.err" || unavailable "configuring the bridge"
    ip link set "$BRIDGE" up 2>"$DIR/net.err" || unavailable "configuring the bridge"
}

write_node_etc() {  # /etc/netns/NAME/hosts (where `ip netns exec` looks too): the node's /etc/hosts
    local name=$1 k
    mkdir -p "/etc/netns/$name"
    {
        echo "127.0.0.1 localhost"
        echo "$NET.1 $(hostname -s)"
        for k in $(seq "$NODES"); do echo "$(node_addr "$k") $PREFIX$k"; done
    } >"/etc/netns/$name/hosts"
}

start_node_net() {  # start_node_net K: namespace ctnodeK, veth ctvK <-> its eth0, address, netem
    local k=$1 name=$PREFIX$1 addr
    addr=$(node_addr "$k")
    if ! ip netns list | awk '{print $1}' | grep -qx "$name"; then
        ip netns add "$name" 2>"$DIR/net.err" || unavailable "network namespaces"
    fi
    if ! ip link show "ctv$k" >/dev/null 2>&1; then
        ip link add "ctv$k" type veth peer name eth0 netns "$name" 2>"$DIR/net.err" ||
            unavailable "veth pairs"
    fi
    { ip link set "ctv$k" master "$BRIDGE" up && ip -n "$name" link set lo up &&
      { ip -n "$name" -4 addr show dev eth0 | grep -q "inet $addr/24" ||
        ip -n "$name" addr add "$addr/24" dev eth0; } &&
      ip -n "$name" link set eth0 up; } 2>"$DIR/net.err" || unavailable "configuring the node's network"
    write_node_etc "$name"
    set_delay "ctv$k" ""            # host side: traffic towards the node
    set_delay eth0 "$name"          # node side: traffic leaving the node
}

set_delay() {  # set_delay DEV NAMESPACE: netem DELAY_US on DEV's egress, or none when 0
    local dev=$1 ns=${2:+-n $2}
    # shellcheck disable=SC2086
    tc $ns qdisc del dev "$dev" root 2>/dev/null || true
    ((DELAY_US == 0)) && return 0
    # shellcheck disable=SC2086
    tc $ns qdisc add dev "$dev" root netem delay "${DELAY_US}us" 2>"$DIR/net.err" ||
        { say "tc netem failed on $dev: $(cat "$DIR/net.err")"; exit 1; }  # netem_check passed
}

# ---- Slurm: slurmctld on the host, one slurmd per namespace -------------------------------

slurmd_pidfile() { echo "$DIR/slurmd.$1.pid"; }

stop_daemons() {
    local f
    for f in "$DIR"/slurmd.*.pid; do [[ -e $f ]] && stop_pidfile "$f"; done
    stop_pidfile "$DIR/slurmctld.pid"
}

write_conf() {  # 0: unchanged; 1: new (daemons restarted by the caller)
    local host cpus mem k
    host=$(hostname -s)
    cpus=$(nproc)
    # the nodes share this machine's memory; each declares its share so that Slurm's
    # bookkeeping stays honest (the CPUs are shared too: see docs/cluster.md)
    mem=$(awk -v n="$NODES" '/MemTotal/ {print int($2 / 1024 * 0.9 / n)}' /proc/meminfo)
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/tmp"
    {
        echo "# generated by scripts/cluster-up.sh on $host: $NODES nodes as network namespaces on $BRIDGE"
        echo "SlurmctldHost=$host($NET.1)"
        conf_common "$CTLD_PORT" "$SLURMD_PORT" "$SRUN_PORTS"
        cat <<CONF
SlurmdSpoolDir=$DIR/spool/%n
SlurmdPidFile=$DIR/slurmd.%n.pid
SlurmdLogFile=$DIR/slurmd.%n.log
SlurmdParameters=config_overrides
TmpFS=$DIR/tmp/%n
CONF
        for k in $(seq "$NODES"); do
            echo "NodeName=$PREFIX$k NodeHostname=$PREFIX$k NodeAddr=$(node_addr "$k") CPUs=$cpus RealMemory=$mem State=UNKNOWN"
        done
        echo "PartitionName=nodes Nodes=$PREFIX[1-$NODES] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
    } >"$CONF.new"
    install_conf "$CONF.new"
}

start_slurmd() {  # start_slurmd K: slurmd inside namespace ctnodeK, in a UTS namespace of its own
    local name=$PREFIX$1
    alive "$(slurmd_pidfile "$name")" && return 0
    STARTED=1
    # a /tmp of its own for Slurm's PMIx server (spmix_appdir_<uid>_<job>.<step> would clash)
    mkdir -p "$DIR/spool/$name" "$DIR/tmp/$name"
    # The node's network namespace, a UTS namespace for its hostname and a mount namespace for
    # its /etc/hosts. Not `ip netns exec`: it remounts /sys, hiding the cgroup mounts slurmd
    # needs. slurmd daemonizes; it and every task it starts stay in all three.
    timeout 30 nsenter --net="/run/netns/$name" unshare --uts --mount --propagation private sh -c \
        "hostname '$name' && mount --bind '/etc/netns/$name/hosts' /etc/hosts &&
         exec slurmd -f '$CONF' -N '$name'" 2>"$DIR/net.err" ||
        { grep -q -i unshare "$DIR/net.err" && unavailable "UTS namespaces"
          say "slurmd of $name failed: $(cat "$DIR/net.err"); log: $DIR/slurmd.$name.log"; exit 1; }
}

# ---- main -----------------------------------------------------------------------------------

mkdir -p "$DIR"
if ((STOP)); then
    stop_daemons
    stop_pidfile "$DIR/munge/munged.pid"
    [[ $(id -u) == 0 ]] && stop_net
    say "stopped"
    exit 0
fi

net_check
netem_check
install_slurm
if ! write_conf; then  # a changed node count or config: restart every daemon on the new one
    stop_daemons
fi
for ns in $(our_namespaces); do  # nodes beyond N from an earlier, larger cluster
    [[ ${ns#"$PREFIX"} -gt $NODES ]] && remove_node_net "$ns"
done
# The network first: where namespaces cannot be had (exit 5) no daemon has been started.
start_bridge
for k in $(seq "$NODES"); do start_node_net "$k"; done
STARTED=0  # whether this call started anything (tests stop only a cluster they started)
alive "$DIR/munge/munged.pid" || STARTED=1
start_munge
if ! alive "$DIR/slurmctld.pid"; then
    # A fresh start: no jobs survive a stopped controller anyway, and recovered node states
    # would say "idle" before any slurmd has registered. Job ids start again at 1, so the PMIx
    # directories of earlier jobs go too.
    stop_daemons
    rm -rf "$DIR/state"/* "$DIR/spool"/* "$DIR/tmp"/*
fi
if ! alive "$DIR/slurmctld.pid"; then
    STARTED=1
    timeout 30 slurmctld -f "$CONF" || { say "slurmctld failed to start, log: $DIR/slurmctld.log"; exit 1; }
fi
for k in $(seq "$NODES"); do start_slurmd "$k"; done
wait_idle "$NODES" || exit 1
echo "$NODES $DELAY_US" >"$DIR/nodes"
delay=""
((DELAY_US == 0)) || delay=", netem delay ${DELAY_US} us each way"
((STARTED)) && how="started" || how="already up"
say "$how: $NODES nodes ($PREFIX[1-$NODES] at $NET.11-$(node_addr "$NODES")$delay); export SLURM_CONF=$CONF"
