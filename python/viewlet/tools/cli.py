"""The ``viewlet`` command (also ``python -m viewlet``).

    viewlet demo [--scale 0.01] [--batches 5] [--batch-size 1000] [--warehouse DIR]
                 [--seed 1] [--views q1,q3,q6]
    viewlet bench [--scale 0.1,1] [--batch-sizes 1000,10000,100000] [--batches N]
                  [--views q1,q3,...] [--depths ho,1,0] [--check every|sample:N]
                  [--out DIR] [--warehouse DIR]
    viewlet sql [--warehouse DIR] [--print-command] [-e SQL | -f FILE] [spark-sql args...]
    viewlet connect-server [--warehouse DIR] [--port P] [--host H] [--print-command]
                           [spark-submit args...]
    viewlet explain FILE.sql [--warehouse DIR] [--table NAME=PATH]... [--schema tpch|orderbook]
                    [--depth N|unlimited]
    viewlet pipelines run | dry-run [--spec spark-pipeline.yml] [--warehouse DIR] [--conf K=V]...

Exit status: 0 success, 1 a demo or benchmark check failed (a view differed from its
recompute), the run failed, `explain` refused the definition, or a pipeline's view failed, 2
the environment is missing something (Java 17+, tpchgen-cli, the view definitions, a file,
Spark 4.1+ for pipelines), a bad option, or a pipeline project this runner cannot run.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

EXIT_OK, EXIT_FAILED, EXIT_ENVIRONMENT = 0, 1, 2

_JAVA_HELP = """\
Viewlet runs on Apache Spark, which needs Java 17 or newer.
Install a JDK/JRE 17+ and either put `java` on your PATH or set JAVA_HOME, e.g.
  Debian/Ubuntu:  sudo apt-get install openjdk-17-jre-headless
  macOS:          brew install openjdk@17
  conda:          conda install -c conda-forge openjdk=17
  any OS:         https://adoptium.net/ (Temurin 17 or 21)
then check with `java -version`."""

def java_problem() -> Optional[str]:
    """Why Spark cannot start here for lack of Java, or None when a Java 17+ is found.

    Spark's launcher uses $JAVA_HOME/bin/java when JAVA_HOME is set, else `java` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        if not os.path.isfile(java):
            return f"JAVA_HOME is set to {java_home}, but there is no {java}."
    else:
        java = shutil.which("java")
        if java is None:
            return "No Java found: `java` is not on PATH and JAVA_HOME is not set."
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"`{java} -version` failed: {e}"
    from ..jvm.build import java_major_version
    text = (proc.stderr or "") + (proc.stdout or "")
    major = java_major_version(text)
    if major is not None and major < 17:
        first = text.strip().splitlines()[0] if text.strip() else "?"
        return f"Found Java {major} at {java} ({first}), but Viewlet needs Java 17 or newer."
    return None


def _positive_float(text: str) -> float:
    v = float(text)
    if not v > 0:
        raise argparse.ArgumentTypeError("must be positive")
    return v


def _non_negative_int(text: str) -> int:
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return v


def _parser() -> argparse.ArgumentParser:
    from .demo import DEFAULT_VIEWS

    ap = argparse.ArgumentParser(
        prog="viewlet",
        description="Viewlet: higher-order incremental view maintenance for Apache Spark.")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    d = sub.add_parser(
        "demo", help="TPC-H views refreshed under an update stream, checked against recompute",
        description="Generate TPC-H, create incremental views from sql/tpch/*.sql, apply update "
                    "batches, refresh the views and check each against a full recompute. Exits "
                    "1 if any check fails.")
    d.add_argument("--scale", type=_positive_float, default=0.01,
                   help="TPC-H scale factor (default 0.01)")
    d.add_argument("--batches", type=_non_negative_int, default=5,
                   help="update batches to apply (default 5)")
    d.add_argument("--batch-size", type=_non_negative_int, default=1000,
                   help="changed rows per batch (default 1000)")
    d.add_argument("--warehouse", default=None,
                   help="directory for the TPC-H tables and the views; kept and reused by later "
                        "runs (default: a temporary directory, removed at the end)")
    d.add_argument("--seed", type=int, default=1, help="update stream seed (default 1)")
    d.add_argument("--views", default=",".join(DEFAULT_VIEWS),
                   help="comma-separated view names from sql/tpch (default "
                        f"{','.join(DEFAULT_VIEWS)}; 'all' for every file there)")
    _bench_parser(sub)
    sub.add_parser("sql", help="Spark's spark-sql shell with Viewlet (runs pyspark's "
                   "bin/spark-sql; `viewlet sql --help` for its options)", add_help=False)
    sub.add_parser("connect-server", help="a Spark Connect server with Viewlet (runs pyspark's "
                   "bin/spark-submit; `viewlet connect-server --help` for its options)",
                   add_help=False)
    _explain_parser(sub)
    _pipelines_parser(sub)
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "sql":        # the rest belongs to spark-sql: parsed on its own
        return _sql(argv[1:])
    if argv and argv[0] == "connect-server":     # the rest may belong to spark-submit
        return _connect_server(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "bench":
        return _bench(args, argv)
    if args.command == "explain":
        return _explain(args)
    if args.command == "pipelines":
        return _pipelines(args)
    return _demo(args)


_SQL_EPILOG = """\
Other arguments go to spark-sql unchanged (after `--` too), e.g. -e "SQL", -f FILE,
-S (silent), --conf k=v, --driver-memory 4g; spark-sql --help lists them. Without -e or -f
the shell is interactive. The first Viewlet statement starts a Python driver attached to the
shell (this Python), which takes a few seconds once.
"""


def _sql_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="viewlet sql", allow_abbrev=False, epilog=_SQL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run Spark's SQL shell (pyspark's bin/spark-sql) with Viewlet: CREATE/"
                    "REFRESH/DROP/SHOW/DESCRIBE/EXPLAIN INCREMENTAL VIEW and queries over "
                    "the views.")
    ap.add_argument("--warehouse", default=None,
                    help="Viewlet warehouse directory or URI (spark.viewlet.warehouse; default "
                         "./viewlet-warehouse). Spark's metastore_db, derby.log and "
                         "spark-warehouse go under <warehouse>/spark when it is local.")
    ap.add_argument("--delta", action="store_true",
                    help="also load delta-spark (Delta Lake's Spark extension and DeltaCatalog; "
                         "its jar is fetched by Spark from Maven Central): catalog tables USING "
                         "delta, UPDATE/DELETE/MERGE on Delta tables, views in SHOW TABLES")
    ap.add_argument("--print-command", action="store_true",
                    help="print the equivalent spark-sql command line and exit; run it "
                         "without this launcher")
    return ap


def _launcher_arguments(parser: argparse.ArgumentParser, argv: List[str]):
    """(the launcher's options, the arguments it passes on to Spark's: those it does not
    know, and all after `--`)."""
    cut = argv.index("--") if "--" in argv else len(argv)
    args, passthrough = parser.parse_known_args(argv[:cut])
    return args, passthrough + argv[cut + 1:]


def _not_launched(prog: str, args, argv_: List[str], env: Dict[str, str]) -> Optional[int]:
    """The exit status when the command is not run (--print-command, no Java); else None,
    the Spark state directory prepared."""
    from . import shell
    if args.print_command:
        print(shell.format_command(argv_, env))
        return EXIT_OK
    problem = java_problem()
    if problem:
        print(f"{prog}: {problem}\n\n{_JAVA_HELP}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    shell.prepare_state_dir(args.warehouse)
    return None


def _sql(argv: List[str]) -> int:
    from ..errors import ViewletError
    from ..jvm.build import ViewletBuildError
    from . import shell

    args, passthrough = _launcher_arguments(_sql_parser(), argv)
    try:
        from ..jvm import jar_path
        argv_, env = shell.spark_sql_command(args.warehouse, passthrough, jar_path(),
                                             delta_spark=args.delta)
    except (shell.ShellUnavailable, ViewletBuildError, ViewletError) as e:
        print(f"viewlet sql: {e}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    status = _not_launched("viewlet sql", args, argv_, env)
    if status is not None:
        return status
    sys.stdout.flush()
    sys.stderr.flush()
    # Replace this process: the shell owns the terminal, its signals and the exit status.
    os.execve(argv_[0], argv_, dict(os.environ, **env))


_CONNECT_EPILOG = """\
Other arguments go to spark-submit unchanged (after `--` too), e.g. --conf k=v,
--driver-memory 4g, --master local[4]. The server runs in the foreground until Ctrl-C (or
SIGTERM); once it accepts clients this prints its URL, for
SparkSession.builder.remote(URL).getOrCreate(). The first Viewlet statement starts a Python
driver attached to the server (this Python), which takes a few seconds once.
"""


def _connect_server_parser() -> argparse.ArgumentParser:
    from .connect import DEFAULT_HOST, DEFAULT_PORT
    ap = argparse.ArgumentParser(
        prog="viewlet connect-server", allow_abbrev=False, epilog=_CONNECT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run Spark's Connect server (pyspark's spark-submit of "
                    "SparkConnectServer) with Viewlet: Connect clients run Viewlet's "
                    "statements and read the views.")
    ap.add_argument("--warehouse", default=None,
                    help="Viewlet warehouse directory or URI (spark.viewlet.warehouse; default "
                         "./viewlet-warehouse). Spark's metastore_db, derby.log and "
                         "spark-warehouse go under <warehouse>/spark when it is local.")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT,
                    help=f"the gRPC port clients connect to (default {DEFAULT_PORT})")
    ap.add_argument("--host", default=DEFAULT_HOST,
                    help=f"the address to listen on (default {DEFAULT_HOST}: this machine "
                         "only; 0.0.0.0 for every interface, with "
                         "--conf spark.connect.authenticate.token=... for a shared secret)")
    ap.add_argument("--delta", action="store_true",
                    help="also load delta-spark (Delta Lake's Spark extension and DeltaCatalog; "
                         "its jar is fetched by Spark from Maven Central)")
    ap.add_argument("--print-command", action="store_true",
                    help="print the equivalent spark-submit command line and exit; run it "
                         "without this launcher")
    return ap


def _connect_server(argv: List[str]) -> int:
    import signal

    from ..errors import ViewletError
    from ..jvm.build import ViewletBuildError
    from . import connect

    args, passthrough = _launcher_arguments(_connect_server_parser(), argv)
    try:
        from ..jvm import jar_path
        argv_, env, url = connect.connect_server_command(
            args.warehouse, args.port, args.host, passthrough, jar_path(),
            delta_spark=args.delta)
    except (connect.ConnectUnavailable, ViewletBuildError, ViewletError) as e:
        print(f"viewlet connect-server: {e}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    status = _not_launched("viewlet connect-server", args, argv_, env)
    if status is not None:
        return status
    sys.stdout.flush()
    server = subprocess.Popen(argv_, env=dict(os.environ, **env))
    # SIGTERM (a service manager, a test) stops the server too; Ctrl-C reaches both already.
    signal.signal(signal.SIGTERM, lambda *_: server.terminate())
    host = url[len("sc://"):].rsplit(":", 1)[0]
    try:
        if connect.wait_until_listening(host, int(url.rsplit(":", 1)[1]),
                                        lambda: server.poll() is None):
            print(f"viewlet connect-server: Spark Connect server with Viewlet at {url}",
                  flush=True)
        return server.wait()
    except KeyboardInterrupt:
        return server.wait()


def _missing_java_or_tpchgen(command: str) -> bool:
    """Print why `viewlet <command>` cannot run here (no Java 17+, no tpchgen-cli), if so."""
    problem = java_problem()
    if problem:
        print(f"viewlet {command}: {problem}\n\n{_JAVA_HELP}", file=sys.stderr)
        return True
    try:
        from ..workloads.tpch import find_tpchgen
        find_tpchgen()
    except FileNotFoundError as e:
        print(f"viewlet {command}: {e}", file=sys.stderr)
        return True
    return False


def _demo(args) -> int:
    from . import demo
    from ..errors import ViewletError

    if args.views.strip().lower() == "all":
        views = demo.available_views()
    else:
        views = [v.strip() for v in args.views.split(",") if v.strip()]
    if not views:
        print("viewlet demo: no views to run.", file=sys.stderr)
        return EXIT_ENVIRONMENT
    try:
        for v in views:
            demo.load_query(v)
    except ViewletError as e:
        print(f"viewlet demo: {e}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    if _missing_java_or_tpchgen("demo"):
        return EXIT_ENVIRONMENT
    try:
        demo.run(scale=args.scale, batches=args.batches, batch_size=args.batch_size,
                 warehouse=args.warehouse, seed=args.seed, views=views, out=sys.stdout)
    except demo.DemoCheckFailed as e:
        print(f"viewlet demo: FAILED: {e}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("viewlet demo: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        from ..jvm.build import ViewletBuildError
        if isinstance(e, ViewletBuildError):
            print(f"viewlet demo: cannot build Viewlet's Spark extension jar: {e}", file=sys.stderr)
            return EXIT_ENVIRONMENT
        raise
    return EXIT_OK


# -- explain -------------------------------------------------------------------------------
def _table_option(text: str):
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, not {text!r}")
    return name.strip(), path.strip()


def _depth_option(text: str):
    from ..api import ddl
    try:
        return ddl._option_value("depth", text, 0)
    except Exception as e:  # noqa: BLE001 - argparse reports it
        raise argparse.ArgumentTypeError(str(e).split(" (position")[0]) from None


def _explain_parser(sub):
    from .offline import SCHEMA_SETS
    e = sub.add_parser(
        "explain", help="print the trigger program of a view definition (no Spark needed)",
        description="Compile the view definition in FILE (a SELECT, or a CREATE INCREMENTAL "
                    "VIEW statement) and print what EXPLAIN INCREMENTAL VIEW would: the maps "
                    "and each relation's trigger. Only table schemas are read (from Delta logs "
                    "or --schema); no Spark session starts. Exits 1 when the definition is "
                    "refused, with the reason.")
    e.add_argument("file", help="a .sql file")
    e.add_argument("--warehouse", default=None,
                   help="Viewlet warehouse whose registered table names the query may use")
    e.add_argument("--table", action="append", default=[], type=_table_option,
                   metavar="NAME=PATH", help="resolve table NAME to the Delta table at PATH "
                   "(repeatable)")
    e.add_argument("--schema", choices=SCHEMA_SETS, default=None,
                   help="resolve the shipped workload's table names to their schemas "
                        "(no data needed): tpch for sql/tpch, orderbook for sql/orderbook")
    e.add_argument("--depth", type=_depth_option, default=argparse.SUPPRESS,
                   help="0 (recompute), 1 (first-order IVM), n, or unlimited (default: the "
                        "file's WITH (depth = ...), else unlimited)")


def _explain(args) -> int:
    from ..errors import ViewletError
    from .offline import OfflineResolver, explain_file
    from ..engine.state.warehouse import WarehouseLayout

    if args.warehouse:
        from ..storage.deltars import DeltaRsStore
        if not DeltaRsStore().exists(WarehouseLayout(args.warehouse).catalog):
            print(f"viewlet explain: {args.warehouse} is not a Viewlet warehouse (no catalog at "
                  f"{WarehouseLayout(args.warehouse).catalog}).", file=sys.stderr)
            return EXIT_ENVIRONMENT
    if not os.path.isfile(args.file):
        print(f"viewlet explain: no such file: {args.file}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    resolver = OfflineResolver(args.warehouse, dict(args.table), args.schema)
    given = hasattr(args, "depth")
    try:
        text = explain_file(args.file, resolver, getattr(args, "depth", None), given)
    except ViewletError as e:
        print(f"viewlet explain: {args.file}: {e.message}", file=sys.stderr)
        return EXIT_FAILED
    try:
        print(text)
    except BrokenPipeError:              # e.g. `viewlet explain q.sql | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


# -- pipelines -----------------------------------------------------------------------------
def _conf_option(text: str):
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key.strip(), value


def _pipelines_parser(sub):
    p = sub.add_parser(
        "pipelines", help="run a Spark Declarative Pipelines project's materialized views "
                          "incrementally (Spark 4.1+)",
        description="Run the materialized views of a Spark Declarative Pipelines project "
                    "(spark-pipeline.yml, its SQL and Python files) with Viewlet: the first run "
                    "creates them, later runs apply only the base tables' changes, in "
                    "dependency order; a view Viewlet cannot maintain is recomputed in full, "
                    "as spark-pipelines does, and the output says why. See docs/pipelines.md.")
    commands = p.add_subparsers(dest="pipelines_command", metavar="COMMAND")
    commands.required = True
    for name, text in (("run", "create or refresh every materialized view"),
                       ("dry-run", "say which views will be incremental and which not (and "
                                   "why), writing nothing")):
        c = commands.add_parser(name, help=text, description=text)
        c.add_argument("--spec", default=None,
                       help="the pipeline spec (default: spark-pipeline.yml or .yaml in this "
                            "folder or the nearest parent that has one)")
        c.add_argument("--warehouse", default=None,
                       help="Viewlet warehouse (default: the spec's spark.viewlet.warehouse "
                            "setting, else viewlet/ under its storage root)")
        c.add_argument("--conf", action="append", default=[], type=_conf_option,
                       metavar="KEY=VALUE",
                       help="a Spark setting for the session (repeatable), after the spec's "
                            "configuration")


def _pipelines(args) -> int:
    from .pipelines.spec import spark_version_problem
    prog = f"viewlet pipelines {args.pipelines_command}"
    problem = spark_version_problem()          # first: pyspark 4.0 has no pipelines at all
    if problem:
        print(f"{prog}: {problem}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    problem = java_problem()
    if problem:
        print(f"{prog}: {problem}\n\n{_JAVA_HELP}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    from .pipelines.command import main as pipelines_main
    return pipelines_main(args.pipelines_command, args.spec, args.warehouse, dict(args.conf))


# -- bench ---------------------------------------------------------------------------------
def _csv(convert, what: str):
    def parse(text: str):
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"no {what} given")
        try:
            return [convert(t) for t in items]
        except (ValueError, argparse.ArgumentTypeError) as e:
            raise argparse.ArgumentTypeError(f"bad {what} in {text!r}: {e}") from None
    return parse


def _positive_int(text: str) -> int:
    v = int(text)
    if v <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return v


def _check_policy(text: str):
    from .bench import CheckPolicy
    try:
        return CheckPolicy.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _bench_parser(sub):
    from .bench import parse_depth

    b = sub.add_parser(
        "bench", help="benchmark: higher-order vs first-order IVM vs recompute (Spark, DuckDB)",
        description="Generate TPC-H (and the order book for the finance views) per scale "
                    "factor, create each view at every depth, apply update batches of each size "
                    "and time, per batch and side by side: the Viewlet refresh of every depth, "
                    "Spark's full recompute (written as Parquet) and DuckDB's recompute; every "
                    "view is checked against the Spark recompute. Writes results.json, "
                    "results.md and PNG plots to --out. Exits 1 if any check fails.")
    b.add_argument("--scale", type=_csv(_positive_float, "scale factor"), default=[0.01],
                   help="comma-separated TPC-H scale factors (default 0.01)")
    b.add_argument("--batch-sizes", type=_csv(_positive_int, "batch size"), default=[1000, 10000],
                   help="comma-separated tuples per batch (default 1000,10000)")
    b.add_argument("--batches", type=_positive_int, default=3,
                   help="measured batches per scale factor and batch size (default 3)")
    b.add_argument("--warmup", type=_non_negative_int, default=1,
                   help="warm-up batches before them, run and checked but not in the medians "
                        "(default 1)")
    b.add_argument("--floor-history", type=_non_negative_int, default=200,
                   help="batches of the per-refresh floor's view; over 43, the median of its "
                        "last 20 refreshes is reported beside that of its first 20 (default 200)")
    b.add_argument("--views", default=None,
                   help="comma-separated view names (found as <name>.sql under sql/) or paths to "
                        ".sql files (default: those of q1,q3,q6,q10,q17a,q18a,q22a,vwap that "
                        "exist)")
    b.add_argument("--depths", type=_csv(parse_depth, "depth"), default=[None, 1, 0],
                   help="Viewlet depths: ho (higher-order), ho-merge (higher-order, maps written "
                        "by one MERGE per batch instead of appended), 1 (first-order), 0 "
                        "(recompute), n (default ho,1,0)")
    b.add_argument("--engines", type=_csv(str, "engine"), default=["auto"],
                   help="where Viewlet refreshes run, one view per engine: auto (the cost rule), "
                        "local (DuckDB in the driver), spark (default auto); depth 0 always "
                        "recomputes on Spark")
    b.add_argument("--baselines", type=_csv(str, "baseline"), default=["spark", "duckdb"],
                   help="recompute baselines: spark, duckdb (default both)")
    b.add_argument("--check", type=_check_policy, default=None,
                   help="check every batch (every, the default) or every N-th and the last "
                        "(sample:N)")
    b.add_argument("--out", default=None,
                   help="results directory (default bench-results/<UTC time>)")
    b.add_argument("--warehouse", default=None,
                   help="directory for the generated data and the views (default: a temporary "
                        "directory, removed at the end)")
    b.add_argument("--label", default="", help="a name for this run in the report")
    b.add_argument("--seed", type=int, default=1, help="update stream seed (default 1)")
    b.add_argument("--driver-memory", default="2g", help="spark.driver.memory (default 2g)")
    b.add_argument("--conf", action="append", default=[], type=_conf_option, metavar="KEY=VALUE",
                   help="a Spark setting of the benchmark's session (repeatable), e.g. "
                        "spark.viewlet.local.memory=64m")


def _bench(args, argv: List[str]) -> int:
    import datetime as dt
    import shlex

    from . import bench
    from .bench import definitions
    from ..errors import ViewletError

    views = [v for v in (args.views or "").split(",") if v.strip()]
    try:
        definitions.resolve(views or definitions.available())
    except ViewletError as e:
        print(f"viewlet bench: {e}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    if _missing_java_or_tpchgen("bench"):
        return EXIT_ENVIRONMENT
    out = args.out or os.path.join(
        "bench-results", dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    options = bench.Options(
        scales=args.scale, batch_sizes=args.batch_sizes, batches=args.batches,
        warmup=args.warmup, views=views, depths=args.depths, engines=args.engines,
        baselines=args.baselines,
        check=args.check or bench.CheckPolicy(), out=out, warehouse=args.warehouse,
        seed=args.seed, driver_memory=args.driver_memory, conf=args.conf, label=args.label,
        floor_history=args.floor_history,
        command="python -m viewlet " + " ".join(shlex.quote(a) for a in argv))
    try:
        options.validate()
    except ValueError as e:
        print(f"viewlet bench: {e}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    try:
        bench.run(options, out=sys.stdout)
    except bench.BenchFailed as e:
        print(f"viewlet bench: FAILED: {e}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("viewlet bench: interrupted", file=sys.stderr)
        return 130
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
