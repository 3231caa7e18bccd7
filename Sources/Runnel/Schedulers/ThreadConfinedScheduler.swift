/// A scheduler whose work runs on threads it owns, one block at a time: a serial queue or an
/// event loop.
///
/// Blocking such a scheduler's own thread until a signal delivers (`first()`, `toArray()`,
/// `waitUntilCompleted()`) deadlocks whenever the signal needs that thread to deliver, so the
/// blocking operators refuse to run while one of these is `currentScheduler`. Event-loop
/// schedulers outside this module adopt the protocol to get the same check.
public protocol ThreadConfinedScheduler: Scheduler {}

extension QueueScheduler: ThreadConfinedScheduler {}
