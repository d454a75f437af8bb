package io.viewlet.spark

import java.util.Locale

import scala.util.Try

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.analysis.{UnresolvedIdentifier, UnresolvedRelation,
  UnresolvedTableOrView}
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.connector.catalog.{Identifier, SupportsNamespaces, TableCatalog}

/**
 * Delta statements in a session without delta-spark (Delta Lake's Spark extension and its
 * DeltaCatalog), where Spark fails with errors that do not say what is missing:
 *
 *  - CREATE [OR REPLACE] TABLE ... USING delta (also AS SELECT and LIKE): DATA_SOURCE_NOT_FOUND;
 *  - INSERT, UPDATE, DELETE, MERGE into delta.`/path`: TABLE_OR_VIEW_NOT_FOUND; into a catalog
 *    table that is a Delta table (a metastore shared with Delta sessions):
 *    DATA_SOURCE_NOT_FOUND;
 *  - DESCRIBE HISTORY | DETAIL name, which Spark reads as a DESCRIBE of a table named HISTORY
 *    (the names Viewlet answers for never get here: ViewletRelations claims them);
 *  - Delta's own statements Spark cannot parse (CONVERT TO DELTA, VACUUM, OPTIMIZE, ...).
 *
 * Each fails instead with `message`: what needs delta-spark, how to start a session with it
 * (the shell, PySpark) and that Viewlet reads and maintains Delta tables without it. The
 * error keeps Spark's category: a ViewletException (AnalysisException), a ViewletParseException
 * for syntax Spark does not know.
 *
 * ViewletParser decides, on the plan Spark parsed (`needsDeltaSpark`; the error is deferred to
 * analysis as a ViewletFailure) or, when Spark's parser failed, on the statement's first words
 * (`deltaStatement`). Not an analyzer rule: Spark's Resolution batch fails on these plans
 * before any extension rule runs (ResolveSessionCatalog looks the provider up, CheckAnalysis
 * reports the unresolved write target), and the one earlier hook, a hint resolution rule, is
 * not run by Spark 4.0's Hive session state (the spark-sql shell's). So plans built by the
 * DataFrame API, which are never parsed, get Spark's errors.
 *
 * "Without delta-spark" is read from the session's settings (spark.sql.extensions and
 * spark_catalog), never from Spark's error text; a session with either of Delta's settings is
 * left alone (Delta's own errors cover a half-configured session), as is every other plan.
 */
object ViewletDeltaHint {
  val DeltaExtension = "io.delta.sql.DeltaSparkSessionExtension"
  private val DeltaCatalogSuffix = "DeltaCatalog"
  private val SessionCatalogName = "spark_catalog"

  /** True when the session has delta-spark: its extension in spark.sql.extensions, or its
   * DeltaCatalog as spark_catalog (what viewlet.configure_spark(delta_spark=True), `viewlet
   * sql --delta` and delta-spark's own instructions set). */
  def deltaSparkIn(session: SparkSession): Boolean = {
    def setting(key: String): String = Try(session.conf.get(key, "")).getOrElse("")
    configured(setting("spark.sql.extensions"), setting("spark.sql.catalog.spark_catalog"))
  }

  /** The decision on the two settings' values (tests call it directly). */
  def configured(extensions: String, sessionCatalog: String): Boolean =
    Option(extensions).getOrElse("").split(",").map(_.trim).contains(DeltaExtension) ||
      Option(sessionCatalog).getOrElse("").trim.endsWith(DeltaCatalogSuffix)

  val Remedy: String =
    "In the spark-sql shell, start it with 'viewlet sql --delta'; in PySpark, build the " +
      "session with viewlet.configure_spark(builder, ..., delta_spark=True) (or with " +
      "delta-spark's own configure_spark_with_delta_pip, its extension and DeltaCatalog). " +
      "Viewlet itself reads and maintains Delta tables without delta-spark (through " +
      "delta-rs: SELECT ... FROM delta.`/path/to/table`, incremental views over them), so " +
      "only writing them through Spark SQL, and Delta Lake's own statements, need it; from " +
      "Python, deltalake.write_deltalake(path, data) writes a Delta table without it."

  /** The error's text: `what` (the statement, as "CREATE TABLE t ... USING delta") first. */
  def message(what: String): String =
    s"$what needs Delta Lake's Spark extension (delta-spark), which this Spark session does " +
      s"not have. $Remedy"

  /** What in the plan needs delta-spark ("CREATE TABLE t ... USING delta", "INSERT INTO
   * delta.`/p` (a Delta table)"), or None. */
  def needsDeltaSpark(session: SparkSession, plan: LogicalPlan): Option[String] =
    plan.collect {
      case c: CreateTable if isDelta(c.tableSpec) =>
        Some(s"CREATE TABLE ${name(c.name)} ... USING delta")
      case c: CreateTableAsSelect if isDelta(c.tableSpec) =>
        Some(s"CREATE TABLE ${name(c.name)} ... USING delta AS SELECT ...")
      case r: ReplaceTable if isDelta(r.tableSpec) =>
        Some(s"${replace(r.orCreate)} ${name(r.name)} ... USING delta")
      case r: ReplaceTableAsSelect if isDelta(r.tableSpec) =>
        Some(s"${replace(r.orCreate)} ${name(r.name)} ... USING delta AS SELECT ...")
      case i: InsertIntoStatement =>
        written(session, if (i.overwrite) "INSERT OVERWRITE" else "INSERT INTO", i.table)
      case u: UpdateTable => written(session, "UPDATE", u.table)
      case d: DeleteFromTable => written(session, "DELETE FROM", d.table)
      case m: MergeIntoTable => written(session, "MERGE INTO", m.targetTable)
      case w: V2WriteCommand => written(session, "INSERT INTO", w.table)  // ... REPLACE WHERE
      case d: DescribeColumn => deltaDescribe(session, d.relation)
      case like if createLikeProvider(like).exists(isDeltaProvider) =>
        Some("CREATE TABLE ... LIKE ... USING delta")
    }.flatten.headOption

  private def replace(orCreate: Boolean) =
    if (orCreate) "CREATE OR REPLACE TABLE" else "REPLACE TABLE"

  private def isDelta(spec: TableSpecBase): Boolean = spec.provider.exists(isDeltaProvider)

  private def isDeltaProvider(provider: String): Boolean =
    provider.trim.equalsIgnoreCase("delta")

  /** CREATE TABLE ... LIKE: a command whose class differs between Spark versions
   * (CreateTableLikeCommand; CreateTableLike from 4.1), both with `provider: Option[String]`. */
  private def createLikeProvider(node: LogicalPlan): Option[String] =
    if (!node.getClass.getSimpleName.startsWith("CreateTableLike")) None
    else Try(node.getClass.getMethod("provider").invoke(node)).toOption.flatMap {
      case Some(p: String) => Some(p)
      case _ => None
    }

  /** A write's target that is a Delta table: "INSERT INTO delta.`/p` (a Delta table)". */
  private def written(session: SparkSession, verb: String, target: LogicalPlan): Option[String] =
    target.collectFirst { case u: UnresolvedRelation => u.multipartIdentifier }.flatMap { parts =>
      if (isDeltaPath(session, parts)) Some(s"$verb ${quote(parts)} (a Delta table)")
      else if (isCatalogDeltaTable(session, parts))
        Some(s"$verb ${quote(parts)} (a Delta table of the catalog)")
      else None
    }

  /** delta.`/path`: `delta` names no catalog and no namespace of the current catalog (then
   * the name is an ordinary table's). */
  private def isDeltaPath(session: SparkSession, parts: Seq[String]): Boolean =
    parts.length == 2 && parts.head.equalsIgnoreCase("delta") && Try {
      val manager = session.sessionState.catalogManager
      !manager.isCatalogRegistered(parts.head) && (manager.currentCatalog match {
        case n: SupportsNamespaces => !n.namespaceExists(Array(parts.head))
        case _ => true
      })
    }.getOrElse(false)

  /** A table of the session catalog whose provider is delta (created by a Delta session
   * sharing the metastore); temporary views shadow it, as in Spark. */
  private def isCatalogDeltaTable(session: SparkSession, parts: Seq[String]): Boolean = Try {
    val manager = session.sessionState.catalogManager
    val catalog = session.sessionState.catalog
    val inSessionCatalog = manager.currentCatalog.name == SessionCatalogName
    val ident = parts match {
      case Seq(t) if inSessionCatalog => Some(TableIdentifier(t))
      case Seq(db, t) if inSessionCatalog && !manager.isCatalogRegistered(db) =>
        Some(TableIdentifier(t, Some(db)))
      case Seq(c, db, t) if c.equalsIgnoreCase(SessionCatalogName) =>
        Some(TableIdentifier(t, Some(db)))
      case _ => None
    }
    !catalog.isTempView(parts) && ident.exists { id =>
      catalog.tableExists(id) && catalog.getTableMetadata(id).provider.exists(isDeltaProvider)
    }
  }.getOrElse(false)

  /** `DESCRIBE HISTORY x` / `DESCRIBE DETAIL x` as Spark parses them: column x of a table
   * named HISTORY / DETAIL. Delta's statement unless such a table or view exists. */
  private def deltaDescribe(session: SparkSession, relation: LogicalPlan): Option[String] =
    relation match {
      case u: UnresolvedTableOrView if u.multipartIdentifier.length == 1 &&
          Set("HISTORY", "DETAIL")(u.multipartIdentifier.head.toUpperCase(Locale.ROOT)) &&
          !relationExists(session, u.multipartIdentifier.head) =>
        Some(s"DESCRIBE ${u.multipartIdentifier.head.toUpperCase(Locale.ROOT)} (Delta Lake's SQL)")
      case _ => None
    }

  private def relationExists(session: SparkSession, name: String): Boolean = Try {
    val manager = session.sessionState.catalogManager
    val catalog = session.sessionState.catalog
    catalog.isTempView(Seq(name)) || (manager.currentCatalog match {
      case _ if manager.currentCatalog.name == SessionCatalogName =>
        catalog.tableExists(TableIdentifier(name))
      case t: TableCatalog => t.tableExists(Identifier.of(manager.currentNamespace, name))
      case _ => true
    })
  }.getOrElse(true)

  private def name(plan: LogicalPlan): String = plan match {
    case u: UnresolvedIdentifier => quote(u.nameParts)
    case other => other.simpleString(1)
  }

  /** A multipart name as written in SQL: parts other than plain identifiers in backticks. */
  def quote(parts: Seq[String]): String = parts.map { p =>
    if (p.matches("[A-Za-z_][A-Za-z0-9_]*")) p else "`" + p.replace("`", "``") + "`"
  }.mkString(".")

  // -- Delta's statements Spark's parser does not know (ViewletParser) ----------------------
  private val CreateClone = java.util.regex.Pattern.compile(
    "(?is)^CREATE\\s+(OR\\s+REPLACE\\s+)?TABLE\\s.*\\sSHALLOW\\s+CLONE\\s.*")
  private val AlterDelta = java.util.regex.Pattern.compile(
    "(?is)^ALTER\\s+TABLE\\s.*\\s(ADD\\s+CONSTRAINT|DROP\\s+CONSTRAINT|DROP\\s+FEATURE)\\s.*")

  /**
   * The Delta statement a text Spark's parser refused starts with ("CONVERT TO DELTA",
   * "VACUUM", ...), or None. Asked only after Spark failed to parse it, so a statement Spark
   * knows is never taken.
   */
  def deltaStatement(sql: String): Option[String] = {
    if (sql == null) return None
    val w = ViewletParser.leadingWords(sql, 3)
    def word(i: Int) = if (i < w.length) w(i) else ""
    val text = ViewletParser.statementText(sql.substring(ViewletParser.skipLeadingComments(sql)))
    word(0) match {
      case "CONVERT" if word(1) == "TO" && word(2) == "DELTA" => Some("CONVERT TO DELTA")
      case v @ ("VACUUM" | "OPTIMIZE" | "RESTORE" | "GENERATE") => Some(v)
      case "REORG" if word(1) == "TABLE" => Some("REORG TABLE")
      case "DESC" | "DESCRIBE" if word(1) == "HISTORY" || word(1) == "DETAIL" =>
        Some(s"DESCRIBE ${word(1)}")
      case "CREATE" if CreateClone.matcher(text).matches() => Some("CREATE TABLE ... SHALLOW CLONE")
      case "ALTER" if word(1) == "TABLE" =>
        val m = AlterDelta.matcher(text)
        if (m.matches()) Some("ALTER TABLE ... " + m.group(1).toUpperCase(Locale.ROOT)
          .replaceAll("\\s+", " ")) else None
      case _ => None
    }
  }

  /** The syntax error for a Delta statement in a session without delta-spark. */
  def parseError(sql: String, statement: String): ViewletParseException =
    new ViewletParseException(message(s"$statement (Delta Lake's SQL)"), sql, None)
}
