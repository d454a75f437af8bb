package io.viewlet.spark

import java.lang.reflect.{InvocationHandler, Method, Proxy}

/**
 * Ctrl-C in the spark-sql shell cancels the running Viewlet statement too.
 *
 * The shell's SIGINT handler (SparkSQLCLIDriver) calls the callbacks registered with Hive's
 * HiveInterruptUtils; Spark's own cancels all Spark jobs. A Viewlet statement runs in the
 * attached Python, which would start its next Spark job and carry on, so this adds a callback
 * that asks the Python side to cancel its statements (ViewletHandler.cancelAll): they stop at
 * their next step, leaving what a crash there would (the next REFRESH completes the batch).
 *
 * Hive's classes are reached by reflection: they exist where the shell runs, and the jar must
 * not need them elsewhere.
 */
object ShellInterrupt {
  private val UtilsClass = "org.apache.hadoop.hive.common.HiveInterruptUtils"
  private val CallbackClass = "org.apache.hadoop.hive.common.HiveInterruptCallback"
  @volatile private var installed = false

  /** Registers the callback once per JVM; false where Hive's interrupt hooks do not exist. */
  def install(): Boolean = synchronized {
    if (!installed) {
      try {
        val utils = Class.forName(UtilsClass)
        val callbackType = Class.forName(CallbackClass)
        val callback = Proxy.newProxyInstance(
          callbackType.getClassLoader, Array[Class[_]](callbackType), new Callback)
        utils.getMethod("add", callbackType).invoke(null, callback)
        installed = true
      } catch {
        case _: ReflectiveOperationException | _: LinkageError => // not a Hive CLI: no hook
      }
    }
    installed
  }

  /** Asks the registered handler to cancel its statements, off the signal thread. */
  def cancelAll(): Unit = {
    val handler = ViewletBridge.handler()
    if (handler != null) {
      val t = new Thread(() =>
        try handler.cancelAll()
        catch { case e: Exception => System.err.println(s"Viewlet: cancelling failed: $e") },
        "viewlet-cancel")
      t.setDaemon(true)
      t.start()
    }
  }

  private class Callback extends InvocationHandler {
    override def invoke(proxy: AnyRef, method: Method, args: Array[AnyRef]): AnyRef =
      method.getName match {
        case "interrupt" => cancelAll(); null
        case "equals" => java.lang.Boolean.valueOf(proxy eq args(0))
        case "hashCode" => Integer.valueOf(System.identityHashCode(proxy))
        case "toString" => "ViewletShellInterrupt"
        case _ => null
      }
  }
}
