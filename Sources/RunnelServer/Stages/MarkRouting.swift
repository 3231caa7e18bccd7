import Runnel
import RunnelProtocol

/// How a map's marks (removals, `synced`) pass a subscription's stages: round them. The stages
/// run over values only (a removal is no value to `map` or `scan`); a mark goes straight to the
/// end of the chain, in its place among the values, except that the removal of a key whose
/// values the stages never let through is not reported (a `filter` kept the key out of the
/// client's table). Subscriptions without stages need none of this: their marks reach the
/// session as they come.
///
/// The values reach the stages through a subject of their own, and the two ends meet in one
/// `Signal.create`: a routed delivery takes the library's locks twice, which only map and
/// pattern subscriptions with stages pay.
///
/// Thread rules: loop thread only; the signal it makes is subscribed once, by its subscription.
/// Lifetime rule: that subscription's disposable holds both inner subscriptions.
enum MarkRouting {
    /// `source` through the chain `compile` makes of what it is given, with marks round it.
    static func around(
        _ source: Signal<Message>, _ compile: (Signal<Message>) throws(ProtocolError) -> Signal<Message>
    ) throws(ProtocolError) -> Signal<Message> {
        let values = Subject<Message>(threading: .confined)
        let staged = try compile(values)
        return Signal.create { downstream in
            let passed = PassedKeys()
            let out = staged.subscribe(
                next: { message in
                    passed.note(message)
                    downstream.sendNext(message)
                },
                error: { downstream.sendError($0) },
                completed: { downstream.sendCompleted() })
            let input = source.subscribe(
                next: { message in
                    guard let mark = message.mark else { return values.sendNext(message) }
                    if mark == .synced || passed.forget(message.label) { downstream.sendNext(message) }
                },
                error: { values.sendError($0) },
                completed: { values.sendCompleted() })
            return CompoundDisposable([out, input])
        }
    }
}

/// The keys a chain let a value of through and whose removal has not come since: the keys in
/// the client's table. Thread rules: loop thread only (`@unchecked Sendable` for the chain's
/// closures). Lifetime rule: held by one routed subscription's closures; holds the labels.
private final class PassedKeys: @unchecked Sendable {
    private var labels: [ObjectIdentifier: SubjectLabel] = [:]

    func note(_ message: Message) {
        guard message.label.key != nil else { return }
        labels[ObjectIdentifier(message.label)] = message.label
    }

    /// Whether `label`'s key was in the table; it no longer is.
    func forget(_ label: SubjectLabel) -> Bool { labels.removeValue(forKey: ObjectIdentifier(label)) != nil }
}
