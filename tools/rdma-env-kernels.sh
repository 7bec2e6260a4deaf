# shellcheck shell=bash
# tools/rdma-env-kernels.sh: which kernel the Soft-RoCE VM boots (tools/rdma-env --kernel). Sourced by
# tools/rdma-env; uses its say/warn/fail and $CACHE_DIR.
#
# A kernel is a version (uname -r, e.g. 6.12.95+deb12-amd64) plus where its files are:
#   installed  the host's own: /boot/vmlinuz-V and /lib/modules/V (what tools/deps vm installs)
#   cached     fetched by us:  $CACHE_DIR/kernels/V/ holds the unpacked Debian packages, with the
#              modules moved to lib/modules/V and indexed by `depmod -b`; the host's /boot and
#              /lib/modules are never touched. The guest bind-mounts that directory (visible read-only
#              through the host-root share) onto its own /lib/modules/V before its first modprobe.
# The names 6.1, 6.12 and 7 stand for Debian's kernels: Debian 12's own, bookworm-backports' and
# trixie-backports' newest. They are fetched with apt under a private configuration in
# $CACHE_DIR/kernels/apt/SUITE (its own sources list, lists, state and cache), from the Debian archive
# that the host's apt sources already name, checked against the host's debian-archive-keyring.

KERNEL_SERIES=(6.1 6.12 7)
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# The Debian suite that has series S's kernels.
series_suite() { # SERIES
    case $1 in
        6.1) echo bookworm ;;
        6.12) echo bookworm-backports ;;
        7) echo trixie-backports ;;
        *) return 1 ;;
    esac
}

# Is version V one of series S (6.1 = 6.1.x, never 6.12.x)?
in_series() { # V SERIES
    [[ $1 == "$2".[0-9]* ]]
}

# Debian's generic amd64 flavour of series S, as in package names: 6.1.0-57-amd64, 6.12.95+deb12-amd64
# (not -cloud-amd64, -rt-amd64, -dbg or -unsigned).
debian_flavour() { # V SERIES
    in_series "$1" "$2" && [[ $1 =~ ^[0-9]+(\.[0-9]+)+(-[0-9]+|\+deb[0-9]+)-amd64$ ]]
}

kernels_dir() { echo "$CACHE_DIR/kernels"; }

# The host's installed kernels that can run the VM (a /boot/vmlinuz-V and rdma_rxe), newest first.
host_kernels() {
    local kv
    for kv in $(find /lib/modules -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -rV); do
        if [ -e "/boot/vmlinuz-$kv" ] && modinfo -k "$kv" -n rdma_rxe >/dev/null 2>&1; then echo "$kv"; fi
    done
}

# The kernels fetched into the cache (complete ones only), newest first.
cached_kernels() {
    local d
    for d in "$(kernels_dir)"/*/.rdma-env-kernel; do
        [ -e "$d" ] || continue
        d=${d%/.rdma-env-kernel}
        echo "${d##*/}"
    done | sort -rV
}

# Set the globals that describe kernel KV: KROOT (the cached root, or empty for the host's own),
# VMLINUZ (the compressed image), KCONFIG (its config, if any) and KMODDIR (its modules directory,
# a physical path).
kernel_use() { # KV
    KV=$1 KROOT=
    local d
    d=$(kernels_dir)/$KV
    if [ -e "$d/.rdma-env-kernel" ]; then
        KROOT=$(cd "$d" && pwd -P) || return 1
    fi
    KMODDIR=$KROOT/lib/modules/$KV
    VMLINUZ=$KROOT/boot/vmlinuz-$KV
    [ -e "$VMLINUZ" ] || VMLINUZ=$KMODDIR/vmlinuz          # usr-merged packages (Debian 13 on)
    KCONFIG=$KROOT/boot/config-$KV
    [ -e "$KCONFIG" ] || KCONFIG=$KMODDIR/config
    [ -e "$VMLINUZ" ] && [ -d "$KMODDIR" ]
}

# Print the installed or cached kernel that SEL names (newest first among those that match), if any.
local_kernel() { # SEL
    local kv
    if [ "$1" = host ]; then                    # today's default: the host's newest installed one
        host_kernels | sed -n 1p | grep .
        return
    fi
    for kv in $( { host_kernels; cached_kernels; } | sort -rV); do
        case $1 in
            6.1|6.12|7) in_series "$kv" "$1" && { echo "$kv"; return 0; } ;;
            *) [ "$kv" = "$1" ] && { echo "$kv"; return 0; } ;;
        esac
    done
    return 1
}

# ---------------------------------------------------------------------------------------------------
# The private apt

# Every "URI SUITE" pair of the host's enabled deb sources (one-line and deb822 formats).
host_apt_sources() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] || continue
        # deb [options] URI SUITE COMPONENTS...
        awk '$1 == "deb" { i = 2
                 if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                 if (i + 1 <= NF) print $i, $(i + 1) }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        awk 'function flush() {
                 if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no")
                     { n = split(uris, u, " "); m = split(suites, s, " ")
                       for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) print u[i], s[j] }
                 types = uris = suites = ""; enabled = "yes" }
             BEGIN { enabled = "yes" }
             /^[ \t]*#/ { next }
             /^[ \t]*$/ { flush(); next }
             { key = tolower($1); sub(/^[^:]*:[ \t]*/, "")
               if (key == "types:") types = $0; else if (key == "uris:") uris = $0
               else if (key == "suites:") suites = $0; else if (key == "enabled:") enabled = $0 }
             END { flush() }' "$f"
    done
}

# The Debian archive's URI: $RDMA_ENV_DEBIAN_URI, else the first of the host's sources whose suite is a
# Debian release (bookworm, bookworm-updates, trixie, stable, ...; not a -security archive, which has
# no backports).
debian_uri() {
    if [ -n "${RDMA_ENV_DEBIAN_URI:-}" ]; then echo "${RDMA_ENV_DEBIAN_URI%/}"; return 0; fi
    host_apt_sources | awk '{ s = $2; sub(/-(updates|backports|proposed-updates)$/, "", s) }
        s ~ /^(buster|bullseye|bookworm|trixie|forky|duke|sid|oldoldstable|oldstable|stable|testing|unstable)$/ {
            sub(/\/+$/, "", $1); print $1; exit }' | grep .
}

# The apt-get/apt-cache options of the private configuration for SUITE (into the array APT_OPTS). The
# host's apt.conf (proxies) still applies; its sources, preferences, lists and state do not.
apt_private() { # SUITE
    local d
    d=$(kernels_dir)/apt/$1
    APT_DIR=$d
    APT_OPTS=(-q -o "Dir::Etc::SourceList=$d/sources.list" -o "Dir::Etc::SourceParts=$d/empty"
              -o "Dir::Etc::Preferences=$d/empty/preferences" -o "Dir::Etc::PreferencesParts=$d/empty"
              -o "Dir::State=$d/state" -o "Dir::State::Lists=$d/lists" -o "Dir::State::status=$d/state/status"
              -o "Dir::Cache=$d/cache" -o "Debug::NoLocking=1" -o "APT::Architecture=amd64"
              -o "APT::Architectures=amd64" -o "Acquire::Languages=none"
              -o "APT::Sandbox::User=$(id -un)")
}

# Bring SUITE's private package lists up to date (at most every 6 hours; always with FORCE=1).
apt_refresh() { # SUITE [FORCE]
    local suite=$1 force=${2:-0} uri out
    apt_private "$suite"
    if [ "$force" != 1 ] && [ -e "$APT_DIR/updated" ] &&
        [ -z "$(find "$APT_DIR/updated" -mmin +360 2>/dev/null)" ]; then
        return 0
    fi
    command -v apt-get >/dev/null 2>&1 || { warn "apt-get not found: kernels can be fetched only on Debian"; return 1; }
    uri=$(debian_uri) || {
        warn "no Debian archive in the host's apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d/)" \
             "to fetch $suite's kernel from: add a Debian source (e.g. for bookworm), or set" \
             "RDMA_ENV_DEBIAN_URI to a Debian mirror's URI (the one whose dists/ holds $suite)"
        return 1
    }
    [ -r "$KEYRING" ] || { warn "$KEYRING is missing: install debian-archive-keyring"; return 1; }
    mkdir -p "$APT_DIR"/{empty,state,lists/partial,cache/archives/partial} || return 1
    : > "$APT_DIR/state/status"
    echo "deb [signed-by=$KEYRING] $uri $suite main" > "$APT_DIR/sources.list"
    say "updating the private package lists for $suite ($uri)"
    if ! out=$(apt-get "${APT_OPTS[@]}" update 2>&1) || grep -q '^[WE]: ' <<<"$out"; then
        printf '%s\n' "$out" | grep -v '^\(Hit\|Get\|Ign\|Reading\|Fetched\)' >&2
        if grep -q 'NO_PUBKEY\|not signed\|EXPKEYSIG' <<<"$out"; then
            warn "$KEYRING cannot verify $suite: update debian-archive-keyring (the trixie keys came with bookworm's 2023.3+deb12u2)"
        fi
        warn "apt-get update failed for $suite from $uri"
        return 1
    fi
    touch "$APT_DIR/updated"
}

# Versions (uname -r) of SUITE's packages for series SERIES that apt can fetch, newest first.
fetchable_kernels() { # SUITE SERIES
    local p
    apt_private "$1"
    apt-cache "${APT_OPTS[@]}" pkgnames linux-image- 2>/dev/null | sed -n 's/^linux-image-//p' | sort -rV |
        while read -r p; do if debian_flavour "$p" "$2"; then echo "$p"; fi; done
}

# Fetch kernel KV from SUITE into the cache: the image package and its parts of the same version
# (Debian 13's images are meta packages over linux-binary-KV, linux-modules-KV and linux-base-KV),
# unpacked with dpkg-deb -x, modules moved to lib/modules/KV and indexed with depmod -b. A lock makes
# concurrent runs fetch once; the entry appears atomically (rename) when complete.
kernel_fetch() { # SUITE KV
    local suite=$1 kv=$2 dir tmp lock_fd pkgs p deb
    dir=$(kernels_dir)
    mkdir -p "$dir" || return 1
    exec {lock_fd}>>"$dir/.lock"
    flock -w 1800 "$lock_fd" || { warn "timed out waiting for another run's kernel fetch ($dir/.lock)"; return 1; }
    if [ -e "$dir/$kv/.rdma-env-kernel" ]; then exec {lock_fd}>&-; return 0; fi
    apt_private "$suite"
    pkgs=("linux-image-$kv")
    for p in $(apt-cache "${APT_OPTS[@]}" depends "linux-image-$kv" 2>/dev/null | awk '$1 == "Depends:" { print $2 }'); do
        [[ $p == linux-*-"$kv" ]] && pkgs+=("$p")
    done
    tmp=$(mktemp -d "$dir/.fetch-$kv.XXXXXX") || { exec {lock_fd}>&-; return 1; }
    say "fetching kernel $kv from $suite: ${pkgs[*]} (into $dir/$kv)"
    mkdir -p "$tmp/debs" "$tmp/root"
    if ! (cd "$tmp/debs" && apt-get "${APT_OPTS[@]}" download "${pkgs[@]}" >/dev/null); then
        warn "apt-get download ${pkgs[*]} failed"
        rm -rf "$tmp"; exec {lock_fd}>&-; return 1
    fi
    for deb in "$tmp"/debs/*.deb; do
        dpkg-deb -x "$deb" "$tmp/root" || { warn "dpkg-deb -x $deb failed"; rm -rf "$tmp"; exec {lock_fd}>&-; return 1; }
    done
    # Debian 13's packages install to /usr/lib/modules; depmod -b and modprobe -d look in ROOT/lib/modules.
    if [ ! -d "$tmp/root/lib/modules/$kv" ] && [ -d "$tmp/root/usr/lib/modules/$kv" ]; then
        mkdir -p "$tmp/root/lib/modules" && mv "$tmp/root/usr/lib/modules/$kv" "$tmp/root/lib/modules/"
    fi
    if ! depmod -b "$tmp/root" "$kv" || ! modinfo -b "$tmp/root" -k "$kv" -n rdma_rxe >/dev/null 2>&1; then
        warn "kernel $kv: depmod failed or it has no rdma_rxe module"
        rm -rf "$tmp"; exec {lock_fd}>&-; return 1
    fi
    (cd "$tmp/debs" && ls) > "$tmp/root/.rdma-env-kernel"
    echo "suite $suite" >> "$tmp/root/.rdma-env-kernel"
    rm -rf "$tmp/debs" "$tmp/root/usr/share/doc" "$tmp/root/usr/share/bug" "$tmp/root/usr/share/lintian"
    rm -rf "${dir:?}/$kv"
    mv -T "$tmp/root" "$dir/$kv" || { rm -rf "$tmp"; exec {lock_fd}>&-; return 1; }
    rm -rf "$tmp"
    exec {lock_fd}>&-
    say "kernel $kv cached in $dir/$kv ($(du -sh "$dir/$kv" | cut -f1))"
}

# The newest kernel SUITE offers for series SERIES (refreshing the lists first).
newest_fetchable() { # SUITE SERIES
    apt_refresh "$1" || return 1
    fetchable_kernels "$1" "$2" | sed -n 1p | grep . ||
        { warn "$1 has no linux-image package of the $2 series"; return 1; }
}

# Select the kernel named SEL (host, 6.1, 6.12, 7 or an exact version) for this run: installed or
# cached if there is one, else fetched. Sets KV, KROOT, VMLINUZ, KCONFIG, KMODDIR (kernel_use).
kernel_select() { # SEL
    local sel=$1 kv suite='' series='' s
    if kv=$(local_kernel "$sel"); then
        kernel_use "$kv" || fail "kernel $kv: no image or modules found"
        return 0
    fi
    case $sel in
        host) fail "no kernel in /lib/modules with a matching /boot/vmlinuz-* and rdma_rxe (package linux-image-amd64 on Debian, linux-image-generic on Ubuntu; or use --kernel 6.1|6.12|7)" ;;
        6.1|6.12|7)
            suite=$(series_suite "$sel")
            kv=$(newest_fetchable "$suite" "$sel") || fail "cannot find Linux $sel in $suite (see above)" ;;
        *)
            for s in "${KERNEL_SERIES[@]}"; do in_series "$sel" "$s" && series=$s; done
            [ -n "$series" ] && suite=$(series_suite "$series")
            [ -n "$suite" ] || fail "kernel '$sel': not installed, not cached, and not of a series rdma-env fetches (6.1, 6.12, 7)"
            apt_refresh "$suite" || fail "cannot look up kernel $sel in $suite (see above)"
            fetchable_kernels "$suite" "$series" | grep -qxF -- "$sel" || fail "kernel $sel is not in $suite (see --list-kernels)"
            kv=$sel ;;
    esac
    kernel_fetch "$suite" "$kv" || fail "cannot fetch kernel $kv from $suite (see above)"
    kernel_use "$kv" || fail "kernel $kv: no image or modules found after fetching"
}

# --fetch-kernel SERIES: fetch the newest of the series, even if an older one is cached.
kernel_fetch_newest() { # SERIES
    local suite kv
    suite=$(series_suite "$1") || fail "--fetch-kernel takes 6.1, 6.12 or 7, not '$1'"
    kv=$(newest_fetchable "$suite" "$1") || exit 125
    kernel_fetch "$suite" "$kv" || exit 125
    echo "$kv"
}

# --list-kernels: one line per kernel (cached, installed, fetchable), then what each name maps to.
list_kernels() {
    local kv s suite d note
    declare -A seen=()
    for kv in $(cached_kernels); do
        d=$(kernels_dir)/$kv
        printf 'cached     %-26s %s (%s)\n' "$kv" "$d" "$(sed -n 's/^suite //p' "$d/.rdma-env-kernel")"
        seen[$kv]=1
    done
    for kv in $(host_kernels); do
        printf 'installed  %-26s /boot/vmlinuz-%s\n' "$kv" "$kv"
        seen[$kv]=1
    done
    for s in "${KERNEL_SERIES[@]}"; do
        suite=$(series_suite "$s")
        apt_refresh "$suite" 1 || { echo "fetchable  (none: cannot read $suite, see above)"; continue; }
        for kv in $(fetchable_kernels "$suite" "$s"); do
            note=; [ -n "${seen[$kv]:-}" ] && note=" (have it)"
            printf 'fetchable  %-26s %s linux-image-%s%s\n' "$kv" "$suite" "$kv" "$note"
        done
    done
    for s in host "${KERNEL_SERIES[@]}"; do
        if kv=$(local_kernel "$s"); then
            kernel_use "$kv"
            note=installed; [ -n "$KROOT" ] && note=cached
        elif [ "$s" != host ] && kv=$(fetchable_kernels "$(series_suite "$s")" "$s" | sed -n 1p | grep .); then
            note="fetched from $(series_suite "$s") on first use"
        else
            kv=none note="not available"
        fi
        printf -- '--kernel %-5s -> %s (%s)\n' "$s" "$kv" "$note"
    done
}

# " (cached)" for a fetched kernel, for the progress lines.
kernel_origin() { [ -z "$KROOT" ] || echo " (cached in $KROOT)"; }
