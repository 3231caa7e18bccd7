/// Receives a signal's events (ReactiveCocoa's `RACSubscriber` protocol).
///
/// A signal sends any number of `sendNext`, then at most one terminal event, `sendError` or
/// `sendCompleted`, and nothing after it. Events to one subscriber never overlap: sources
/// that can be driven from several threads (`Signal.create`, subjects, operators that merge
/// sources) serialise what they send, so an operator's sink needs no lock of its own.
///
/// `didSubscribe(with:)` is called once per subscription with the disposable of that
/// subscription, before any of its events.
public protocol Subscriber<Value>: AnyObject, Sendable {
    associatedtype Value: Sendable

    func sendNext(_ value: Value)
    func sendError(_ error: any Error)
    func sendCompleted()
    func didSubscribe(with disposable: CompoundDisposable)
}
