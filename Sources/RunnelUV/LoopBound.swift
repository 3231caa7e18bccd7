/// A value that belongs to one loop, carried where Swift wants `Sendable` (a closure handed to
/// another thread, a type shared between threads) but read and changed only on that loop's
/// thread: every access checks it (`LoopScheduler.assertOnLoopThread`, in debug builds), as
/// swift-nio's `NIOLoopBound` does. It is how a type says which loop its state belongs to.
///
/// Thread rules: made and used on `loop`'s thread (or before the loop runs, on the thread that
/// will run it); passed anywhere. Lifetime rule: holds its value.
public struct LoopBound<Value>: @unchecked Sendable {
    public let loop: LoopScheduler
    private var stored: Value

    public init(_ value: Value, loop: LoopScheduler) {
        loop.assertOnLoopThread()
        self.loop = loop
        stored = value
    }

    public var value: Value {
        get {
            loop.assertOnLoopThread()
            return stored
        }
        set {
            loop.assertOnLoopThread()
            stored = newValue
        }
    }
}

/// A weak reference to an object of one loop, shared with other threads before the object
/// exists or without keeping it alive (a handler that cnats or the journal's writer holds, whose
/// work reaches the object through a `LoopInbox`): set and read on the loop's thread only,
/// checked like `LoopBound`.
///
/// Thread rules: `object` on `loop`'s thread only; the reference itself goes anywhere.
/// Lifetime rule: holds the object weakly.
public final class LoopBoundReference<Object: AnyObject>: @unchecked Sendable {
    private struct Weak {
        weak var object: Object?
    }

    private var bound: LoopBound<Weak>

    public init(loop: LoopScheduler) { bound = LoopBound(Weak(), loop: loop) }

    public var loop: LoopScheduler { bound.loop }

    public var object: Object? {
        get { bound.value.object }
        set { bound.value.object = newValue }
    }
}
