import Runnel
import RunnelProtocol

/// A map's subscriptions that each follow one key (a first stage `filter` of `$key == "K"`: a
/// dashboard's one-key panel, `MapKeyFilter`), indexed by key: one subscriber of the map's
/// subject hands each change to its key's subscriptions only, so a write costs one lookup
/// however many panels follow other keys, where a filter per panel would test every write. The
/// map's end goes to all.
///
/// Thread rules: loop thread only, like its entry (`@unchecked Sendable` for the library's
/// closures). Lifetime rule: made at the map's first keyed subscription and subscribed to its
/// subject from then on; holds a subject per followed key while one follows it.
final class MapKeyRouter: Subscriber, @unchecked Sendable {
    private var keys: [String: Subject<Message>] = [:]
    /// The keyed subscriptions, over every key.
    private(set) var followers = 0

    /// `key`'s changes from now on, and the map's end.
    func changes(of key: String) -> Signal<Message> {
        Signal.create { [self] subscriber in
            let subject = keys[key] ?? Subject<Message>(threading: .confined)
            keys[key] = subject
            followers += 1
            let subscription = subject.subscribe(subscriber)
            return Disposable { [self] in
                subscription.dispose()
                followers -= 1
                if subject.subscriberCount == 0 && keys[key] === subject { keys[key] = nil }
            }
        }
    }

    func sendNext(_ message: Message) {
        guard let key = message.label.key, let subject = keys[key] else { return }
        subject.sendNext(message)
    }

    func sendError(_ error: any Error) {
        for subject in letGo() { subject.sendError(error) }
    }

    func sendCompleted() {
        for subject in letGo() { subject.sendCompleted() }
    }

    func didSubscribe(with disposable: CompoundDisposable) {}

    /// The keys' subjects, which the map's end ends.
    private func letGo() -> [Subject<Message>] {
        let subjects = Array(keys.values)
        keys = [:]
        return subjects
    }
}
