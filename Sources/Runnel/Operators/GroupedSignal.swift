/// One group of `groupBy(key:transform:)`: a subject carrying the key its values share
/// (ReactiveCocoa's `RACGroupedSignal`).
///
/// Like any subject it is hot: a subscriber gets only what is sent after it subscribes. The
/// group sends what `groupBy` routes to it and terminates when the grouped source does.
public final class GroupedSignal<Key: Hashable & Sendable, Value: Sendable>: Subject<Value>, @unchecked Sendable {
    /// The key shared by every value of the group.
    public let key: Key

    /// A group for `key`.
    public init(key: Key) {
        self.key = key
        super.init()
    }
}
