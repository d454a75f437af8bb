package io.viewlet.spark

/**
 * Implemented in Python (Py4J callback, `implements = ["io.viewlet.spark.ViewletHandler"]`);
 * compiles to a plain Java interface. Written in Scala so the jar builds with scalac alone (a JRE
 * has no javac).
 *
 * Error replies of describe/execute: `{"error": {"kind": "parse"|"analysis"|..., "message":
 * "...", "position": <char offset into the statement text, or null>}}`.
 */
trait ViewletHandler {

  /** Parse time, no side effects: `{"columns": [{"name": "...", "type": "<Spark DDL type>"}]}`. */
  def describe(statementText: String): String

  /** Run time, once: `{"rows": [[v, ...], ...]}` (JSON scalars; ISO strings for timestamps). */
  def execute(statementText: String): String

  /** execute() under an id that cancelStatement() can name (ViewletProtocol.execute). */
  def executeStatement(statementId: String, statementText: String): String

  /**
   * Cancel the statement executeStatement runs under this id: it stops at its next step, as
   * on Ctrl-C. Called when the thread that runs it is interrupted (a Spark Connect client
   * interrupted its operation); `reason` goes into the statement's error.
   */
  def cancelStatement(statementId: String, reason: String): Unit

  /**
   * A name Spark's catalog did not resolve, as a JSON array of parts (`["db","v"]`): an analyzed
   * Catalyst LogicalPlan, or null when the name is not Viewlet's.
   */
  def resolveRelation(multipartIdentifierJson: String): AnyRef

  /**
   * Names a parsed statement time-travels on or writes to, as a JSON array of name-part
   * arrays; per name `{"travel": true|false, "write": "<why it is refused>"|null}`:
   * whether Viewlet resolves its time travel, and whether writing to it is refused.
   */
  def relationKinds(namesJson: String): String

  /** A name's rows at a version (`version`, or the last at `timestampMicros`): an analyzed
   * LogicalPlan, or null when the name is not Viewlet's. */
  def resolveRelationAt(multipartIdentifierJson: String, version: String,
                        timestampMicros: java.lang.Long): AnyRef

  /**
   * Cancel every Viewlet statement running in this Python process (Ctrl-C in the spark-sql
   * shell, see ShellInterrupt); the number of statements asked to stop.
   */
  def cancelAll(): Int
}
