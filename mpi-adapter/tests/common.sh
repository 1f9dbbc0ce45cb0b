# common.sh - sourced by the mpi-adapter tests: locates the cached MPICH
# build, the provider and p3mpirun; skips (77) when MPICH is not built.
set -eu
: "${P3_SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${P3_BUILDDIR:=$P3_SRCDIR}"
: "${FI_PTL3_PROVIDER_DIR:=$P3_BUILDDIR/mpi-adapter/.libs}"
export P3_SRCDIR P3_BUILDDIR FI_PTL3_PROVIDER_DIR
P3MPIRUN="$P3_SRCDIR/tools/p3mpirun"
TESTNAL="${P3_TEST_NAL:-shmem}"

need_provider() {
	[ -e "$FI_PTL3_PROVIDER_DIR/libptl3-fi.so" ] || {
		echo "SKIP: $FI_PTL3_PROVIDER_DIR/libptl3-fi.so not built"
		exit 77
	}
	PTLLIB="$P3_BUILDDIR/portals/.libs"
	LD_LIBRARY_PATH="$PTLLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export LD_LIBRARY_PATH
}

# Programs that are not built with the sanitizers (fi_info, MPI programs
# built by MPICH's mpicc) cannot load a sanitizer-built provider.
need_nosan() {
	if [ "${P3_SAN_BUILD:-no}" = yes ]; then
		echo "SKIP: sanitizer build: $1 cannot load an ASan-built libptl3-fi.so"
		exit 77
	fi
}

need_mpich() {
	need_nosan "MPICH programs"
	MPICH=$("$P3_SRCDIR/mpi-adapter/build-mpich" --print-prefix 2>/dev/null) || {
		echo "SKIP: no cached MPICH ch4:ofi build (run mpi-adapter/build-mpich, ~10 min)"
		exit 77
	}
	export P3_MPICH_PREFIX="$MPICH"
}

TMPD=$(mktemp -d /tmp/p3mpi-test.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT

build_mpi_prog() {
	# build_mpi_prog NAME: tests/NAME.c -> $TMPD/NAME with the cached mpicc
	"$MPICH/bin/mpicc" -O2 -o "$TMPD/$1" "$P3_SRCDIR/mpi-adapter/tests/$1.c"
}

# need_test_prog NAME: exe=mpi-adapter/tests/NAME of the build (a check
# program), log=a file for its output in $TMPD
need_test_prog() {
	exe="$P3_BUILDDIR/mpi-adapter/tests/$1"
	[ -x "$exe" ] || fail "$exe not built"
	log="$TMPD/log"
}

# counter NAME: the first value of the provider counter NAME in $log
# (printed with FI_PTL3_COUNTERS=1)
counter() { sed -n "s/.* $1 \([0-9]*\).*/\1/p" "$log" | head -1; }

fail() {
	echo "FAIL: $*"
	exit 1
}
