import Synchronization

/// A Swift object that owns one or more libuv handles on a loop.
///
/// Lifetime rule shared by every owner: the owner is retained (`Unmanaged.passRetained`, stored
/// in `handle->data`) from the handle's `uv_*_init` until its close callback, so libuv never
/// calls back into a freed object; the handle's C memory is freed only in that close callback,
/// so the owner never frees memory libuv still points to. The loop also lists every open owner
/// so that a shutdown can close them all. Methods of the protocol run on the loop thread.
protocol HandleOwner: AnyObject {
    /// Closes the owner's handles because the loop is shutting down.
    func closeForShutdown()
}
