/// A subscriber made of three blocks (ReactiveCocoa's `RACSubscriber`).
///
/// Thread-safe: it serialises its own events with a recursive lock, so one block subscriber
/// may be handed to several signals. After a terminal event, or once `disposable` is disposed,
/// no block runs again: a dispose that returns has waited for a block running on another
/// thread. A terminal event disposes every subscription it was handed; a subscription that
/// ends on its own takes itself out of `disposable`, so a long-lived subscriber does not grow.
public final class BlockSubscriber<Value: Sendable>: Subscriber, @unchecked Sendable {
    /// The blocks, the lock and the subscriptions, in the one object that `disposable` is: a
    /// dispose clears the blocks without referring back to the subscriber.
    private let blocks: SubscriberBlocks<Value>

    /// Holds every subscription this subscriber was handed. Disposing it stops the subscriber.
    public var disposable: CompoundDisposable { blocks }

    public init(
        next: (@Sendable (Value) -> Void)? = nil,
        error: (@Sendable (any Error) -> Void)? = nil,
        completed: (@Sendable () -> Void)? = nil
    ) {
        blocks = SubscriberBlocks(next: next, error: error, completed: completed)
    }

    public func sendNext(_ value: Value) { blocks.sendNext(value) }
    public func sendError(_ error: any Error) { blocks.sendError(error) }
    public func sendCompleted() { blocks.sendCompleted() }

    public func didSubscribe(with other: CompoundDisposable) {
        // The subscription takes itself out of `disposable` when it ends.
        blocks.addPurging(other)
    }
}
