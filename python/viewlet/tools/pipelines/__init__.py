"""`viewlet pipelines run | dry-run`: a Spark Declarative Pipelines project whose materialized
views Viewlet maintains (docs/pipelines.md).

    spec.py     the project's spark-pipeline.yml, found and checked by SDP's own code
    graph.py    the project's definitions, registered through SDP's registration API: SQL
                files parsed by SDP's SqlGraphRegistrationContext, Python files imported
                under a GraphElementRegistry of ours
    runner.py   the materialized views in dependency order: Viewlet's CREATE OR REFRESH, or
                Spark's full recompute for a query Viewlet cannot maintain; dry-run's report
"""
