package io.viewlet.spark

import org.apache.spark.sql.SparkSessionExtensions

/** Entry point for `spark.sql.extensions=io.viewlet.spark.ViewletExtensions`. */
class ViewletExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectParser((session, parser) => ViewletParser.wrap(session, parser))
    extensions.injectResolutionRule(_ => new ViewletResolution)
    extensions.injectCheckRule(_ => new ViewletWriteGuard)
    extensions.injectTableFunction(ViewletHistoryFunction.description)
  }
}
