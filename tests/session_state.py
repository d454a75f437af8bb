"""A test that switches the session's Viewlet (another warehouse, other settings, background
refreshes) leaves it as it found it: the session-scoped `vl` fixture stays the handler of the
session's Viewlet statements."""
from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def viewlet_restored(spark):
    """Afterwards the session's handler, context and spark.viewlet.* settings are as before;
    a context enabled meanwhile is stopped and its views leave the session's catalog."""
    import viewlet.api.session as sessions
    from viewlet.engine.state.published import publish_all, withdraw_temporary
    bridge = getattr(spark._jvm, "io.viewlet.spark.ViewletBridge")
    handler, current = bridge.handler(), sessions._current
    settings = {k: v for k, v in spark.conf.getAll.items() if k.startswith("spark.viewlet.")}
    try:
        yield
    finally:
        other = sessions._current
        if other is not None and other is not current:
            other.stop()
            withdraw_temporary(other.ctx)     # its views leave the session
            if current is not None:
                publish_all(current.ctx)
        for key in [k for k in spark.conf.getAll if k.startswith("spark.viewlet.")]:
            if key not in settings:
                spark.conf.unset(key)
        for key, value in settings.items():
            spark.conf.set(key, value)
        if handler is not None:
            bridge.register(handler)
        else:
            bridge.unregister()
        sessions._current = current
