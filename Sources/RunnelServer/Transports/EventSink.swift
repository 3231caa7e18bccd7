import Runnel

/// Receives a subscription's events at the end of its chain and hands them to the session,
/// which writes them through its transport: the one sink for every transport. A value goes
/// through the transport's `deliver`, whose code is the session's delivery compiled for that
/// transport's type, so its writes are direct calls. (A sink generic over the transport's type
/// would run unspecialised behind the library's `Subscriber` witness: 22 instructions more a
/// delivery, bench/README.md.)
///
/// Thread rules: loop thread only, like its session. Lifetime rule: holds the session (which
/// holds the transport) until the subscription is disposed; the session lives until it has
/// disposed every subscription (on close).
package final class EventSink: Subscriber, @unchecked Sendable {
    let session: Session
    let subscription: SessionSubscription
    let transport: any SessionTransport

    init(session: Session, subscription: SessionSubscription, transport: any SessionTransport) {
        self.session = session
        self.subscription = subscription
        self.transport = transport
    }

    package func sendNext(_ value: Message) { transport.deliver(value, through: self) }
    package func sendError(_ error: any Error) { session.deliverTerminal(error, to: subscription) }
    package func sendCompleted() { session.deliverTerminal(nil, to: subscription) }
    package func didSubscribe(with disposable: CompoundDisposable) {}
}
