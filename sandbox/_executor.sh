# shellrt docker executor: a persistent, POSIX-sh-only command runner.
#
# The container's main process (under docker-init, which reaps orphans), so
# starting it costs no `docker exec`. Runs as:
#     /bin/sh IO_DIR/executor.sh IO_DIR PRIV_DIR
# IO_DIR is a host directory bind-mounted into the container. The control
# channel is two FIFOs there: requests arrive on IO_DIR/ctl.in (opened
# read-write, so opening never waits for the host) and events leave on
# IO_DIR/ctl.out (the host holds its read end before the container starts).
# For each command the host creates the FIFOs it writes its output to (and
# reads its input from) plus a request file of sh-quoted assignments, so
# command data never passes through this shell: output streams at pipe speed
# and the control channel only ever carries short lines. PRIV_DIR (on the
# /tmp tmpfs) holds the cwd files. This shell's own stderr is the container's
# log (docker logs), read by the host only to explain a failed start.
#
# Control requests (one line each, host -> executor):
#   R <id> <flags>   run; flags: m = merge stderr into stdout, i = stdin FIFO
#   K <id> <pid>     kill the command's whole tree (see _kill), then ack
#   P <id>           ping
#   Z <id>           reset for the next task (see _reset), then report
#   U <id>           re-exec through IO_DIR/sh (see _upgrade): a new hello follows
#   Q <id>           quit (the container stops)
# Events (one short line each, executor -> host; a line is one write(2) of
# less than PIPE_BUF bytes, so concurrent runners never interleave inside one):
#   H <version> <executor pid> <setsid 0|1> <shell path>
#   S <id> <pid>                      started (pid is also pgid and sid)
#   E <id> <reason>                   could not start (cwd-missing, request)
#   X <id> <rc> <oom 0|1> [<cwd>]     exited; rc is 128+N for signal N
#   K <id> <killed count>             kill finished: nothing of the tree left
#   P <id>                            pong
#   U <id> fail                       IO_DIR/sh cannot run (no re-exec)
#   Z <id> <passes> <left 0|1> <wiped 0|1> <shm> <msg> <sem>
#                                     reset done: kill passes, processes left,
#                                     /tmp etc. emptied, SysV IPC objects left
#
# Only builtins run in the kill path: under a fork bomb no fork succeeds, and
# the kill must still work.

IO=$1
PRIV=$2
exec 0<>"$IO/ctl.in" 1>"$IO/ctl.out" || exit 97
umask 077
mkdir -p "$PRIV" 2>/dev/null

HAVE_SETSID=0
command -v setsid >/dev/null 2>&1 && HAVE_SETSID=1
SHELLP=/bin/sh
if [ -x /bin/bash ]; then
    SHELLP=/bin/bash
elif [ -x /usr/bin/bash ]; then
    SHELLP=/usr/bin/bash
fi

# OOMN <- the memory cgroup's oom_kill counter (v2 memory.events or v1
# memory.oom_control), 0 when unreadable. Builtins only.
_oomcount() {
    OOMN=0
    for _f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do
        [ -r "$_f" ] || continue
        while read -r _k _v; do
            [ "$_k" = oom_kill ] && OOMN=$_v
        done <"$_f"
        return 0
    done
}

# Runs in a background subshell: start the command in its own session, report
# S, wait, report X with the exit code, OOM flag and final cwd. The runner
# opens the FIFOs itself before forking, so by the time S is sent the command
# holds its ends (the host may then drop its placeholder writers safely).
_run() {
    id=$1
    flags=$2
    i=/dev/null
    case $flags in *i*) i="$IO/$id.in" ;; esac
    C=
    CWDF=
    . "$IO/$id.req" 2>/dev/null || { echo "E $id request"; return 0; }
    cd -- "$C" 2>/dev/null || { echo "E $id cwd-missing"; return 0; }
    command exec 3>"$IO/$id.out" 5<"$i" || { echo "E $id streams"; return 0; }
    case $flags in
        *m*) command exec 4>&3 ;;
        *) command exec 4>"$IO/$id.err" || { echo "E $id streams"; return 0; } ;;
    esac
    _oomcount
    o0=$OOMN
    if [ "$HAVE_SETSID" = 1 ]; then
        setsid "$@" <&5 >&3 2>&4 3>&- 4>&- 5<&- &
    else
        "$@" <&5 >&3 2>&4 3>&- 4>&- 5<&- &
    fi
    pid=$!
    exec 3>&- 4>&- 5<&-
    echo "S $id $pid"
    wait "$pid"
    rc=$?
    _oomcount
    oom=0
    if [ "$rc" = 137 ] && [ "$OOMN" != "$o0" ]; then oom=1; fi
    cwd=
    if [ -n "$CWDF" ] && [ -f "$CWDF" ]; then
        read -r cwd <"$CWDF"
        rm -f "$CWDF"
    fi
    echo "X $id $rc $oom $cwd"
}

# Kill everything that belongs to command <id> whose session/pgid is <pg>:
# members of its process group or session, descendants of those, and any
# process whose environment carries the command's marker (escaped with
# setsid and double fork). Each pass stops every match first, then kills
# them, and passes repeat until one finds nothing, so a tree that keeps
# forking cannot outrun the kill. Builtins only (works under a fork bomb).
_kill() {
    kid=$1
    pg=$2
    marker="SHELLRT_TASK=x${kid}x"
    killed=0
    pass=0
    while [ "$pass" -lt 100 ]; do
        pass=$((pass + 1))
        kill -STOP -- "-$pg" 2>/dev/null
        set_=" "
        for d in /proc/[0-9]*; do
            p=${d#/proc/}
            [ "$p" = 1 ] && continue
            [ "$p" = "$$" ] && continue
            st=
            { read -r st <"$d/stat"; } 2>/dev/null || continue
            rest=${st##*) }
            # shellcheck disable=SC2086
            set -- $rest
            [ "$1" = Z ] && continue
            hit=0
            if [ "$3" = "$pg" ] || [ "$4" = "$pg" ] || [ "$p" = "$pg" ]; then
                hit=1
            else
                case $set_ in *" $2 "*) hit=1 ;; esac
            fi
            if [ "$hit" = 0 ]; then
                # sh's read drops the NULs between entries: a substring match
                # finds the marker wherever the environment lists it.
                { while read -r en || [ -n "$en" ]; do
                    case $en in *"$marker"*) hit=1 && break ;; esac
                done <"$d/environ"; } 2>/dev/null
            fi
            if [ "$hit" = 1 ]; then
                kill -STOP "$p" 2>/dev/null
                set_="$set_$p "
            fi
        done
        [ "$set_" = " " ] && break
        for p in $set_; do
            kill -KILL "$p" 2>/dev/null && killed=$((killed + 1))
        done
        kill -KILL -- "-$pg" 2>/dev/null
    done
    echo "K $kid $killed"
}

# IPCN <- number of SysV IPC objects of kind $1 (shm, msg, sem): lines after
# the header of /proc/sysvipc/$1; -1 when unreadable. Builtins only.
_ipccount() {
    IPCN=-1
    [ -r "/proc/sysvipc/$1" ] || return 0
    IPCN=0
    { while read -r _l; do IPCN=$((IPCN + 1)); done <"/proc/sysvipc/$1"; } 2>/dev/null
    IPCN=$((IPCN - 1))
}

# Return the container to a pristine state for the next task (batch container
# recycling). The host checks the outcome itself from outside (the process
# list, mounts and files through /proc/<pid>/root); this only does the work:
# 1. kill every process but PID 1 (docker-init) and this executor: kill -KILL -1
#    reaches all of them (setsid, nohup and double-forked ones too: they all run
#    as this user), repeated until /proc lists nothing else (orphans are reaped
#    by docker-init);
# 2. empty /tmp, /dev/shm and /dev/mqueue (an empty private dir is kept);
# 3. remove SysV IPC objects (ipcrm, when the image has it) and count the rest.
_reset() {
    zid=$1
    passes=0
    left=1
    while [ "$passes" -lt 100 ]; do
        passes=$((passes + 1))
        kill -KILL -1 2>/dev/null
        wait 2>/dev/null
        left=0
        for d in /proc/[0-9]*; do
            p=${d#/proc/}
            [ "$p" = 1 ] || [ "$p" = "$$" ] || { left=1 && break; }
        done
        [ "$left" = 0 ] && break
        sleep 0.01 2>/dev/null
    done
    wiped=1
    for dir in /tmp /dev/shm /dev/mqueue; do
        [ -d "$dir" ] || continue
        set --
        for f in "$dir"/* "$dir"/.[!.]* "$dir"/..?*; do
            [ -e "$f" ] || [ -L "$f" ] || continue
            if [ "$f" = "$PRIV" ] && [ -d "$f" ] && ! [ -L "$f" ]; then
                _e=0
                for g in "$f"/* "$f"/.[!.]* "$f"/..?*; do
                    [ -e "$g" ] || [ -L "$g" ] || continue
                    _e=1 && break
                done
                [ "$_e" = 0 ] && continue
            fi
            set -- "$@" "$f"
        done
        [ $# = 0 ] && continue
        if ! rm -rf -- "$@" 2>/dev/null; then
            # unreadable or unwritable directories: make them ours again, then retry
            chmod -R u+rwx -- "$@" 2>/dev/null
            rm -rf -- "$@" 2>/dev/null || wiped=0
        fi
    done
    [ -d "$PRIV" ] || mkdir -p "$PRIV" 2>/dev/null || wiped=0
    _ipccount shm
    s=$IPCN
    _ipccount msg
    m=$IPCN
    _ipccount sem
    if [ "$s" != 0 ] || [ "$m" != 0 ] || [ "$IPCN" != 0 ]; then
        command -v ipcrm >/dev/null 2>&1 && ipcrm -a >/dev/null 2>&1
        _ipccount shm
        s=$IPCN
        _ipccount msg
        m=$IPCN
        _ipccount sem
    fi
    echo "Z $zid $passes $left $wiped $s $m $IPCN"
}

# Re-exec this executor through IO_DIR/sh, an execute-only copy of the image's
# /bin/sh placed there by the host (root-owned, mode 0711): a process that
# executes a file it cannot read is not dumpable, so the commands (same user)
# can neither ptrace it nor write its /proc/<pid>/mem. Required before a
# container is recycled between tasks: the executor outlives every reset.
_upgrade() {
    if "$IO/sh" -c 'exit 0' 2>/dev/null; then
        exec "$IO/sh" "$IO/executor.sh" "$IO" "$PRIV"
    fi
    echo "U $1 fail"
}

echo "H 1 $$ $HAVE_SETSID $SHELLP"
while read -r op id a; do
    case $op in
        R) _run "$id" "$a" & ;;
        K) _kill "$id" "$a" ;;
        P) echo "P $id" ;;
        Z) _reset "$id" ;;
        U) _upgrade "$id" ;;
        Q) break ;;
    esac
done
