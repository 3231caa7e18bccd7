extension Signal {
    /// Splits the values into groups by `key`, sending each new group when its first value
    /// arrives, then that value (transformed) into the group (ReactiveCocoa's
    /// `groupBy:transform:`).
    ///
    /// A group is a hot `GroupedSignal`: subscribe to it when it is sent (inline, in the block
    /// that receives it) to see its first value.
    ///
    /// - Completion: when this signal completes, every group completes, then the result.
    /// - Error: when this signal errs, every group is sent the error, then the result.
    /// - Disposal: disposing the result disposes this signal but leaves the groups
    ///   unterminated, as in ReactiveCocoa; their subscribers stay subscribed.
    public func groupBy<Key: Hashable & Sendable, U: Sendable>(
        key: @escaping @Sendable (Value) -> Key, transform: @escaping @Sendable (Value) -> U
    ) -> Signal<GroupedSignal<Key, U>> {
        let source = self
        return .operatorSignal(name: "[\(source.name)] -groupBy:transform:") { downstream in
            source.subscribe(GroupBySink(downstream: downstream, key: key, transform: transform))
        }
    }

    /// Splits the values into groups by `key` (ReactiveCocoa's `groupBy:`); see
    /// `groupBy(key:transform:)`.
    public func groupBy<Key: Hashable & Sendable>(
        key: @escaping @Sendable (Value) -> Key
    ) -> Signal<GroupedSignal<Key, Value>> {
        groupBy(key: key, transform: { $0 })
    }
}

/// Routes each value to the subject of its key, creating and sending new groups. The groups
/// are released when the source terminates.
private final class GroupBySink<Value: Sendable, Key: Hashable & Sendable, U: Sendable>: Subscriber,
    @unchecked Sendable
{
    private let downstream: any Subscriber<GroupedSignal<Key, U>>
    private let key: @Sendable (Value) -> Key
    private let transform: @Sendable (Value) -> U
    private var groups: [Key: GroupedSignal<Key, U>] = [:]

    init(
        downstream: any Subscriber<GroupedSignal<Key, U>>, key: @escaping @Sendable (Value) -> Key,
        transform: @escaping @Sendable (Value) -> U
    ) {
        self.downstream = downstream
        self.key = key
        self.transform = transform
    }

    func didSubscribe(with disposable: CompoundDisposable) { downstream.didSubscribe(with: disposable) }

    func sendNext(_ value: Value) {
        let groupKey = key(value)
        let group: GroupedSignal<Key, U>
        if let existing = groups[groupKey] {
            group = existing
        } else {
            group = GroupedSignal(key: groupKey)
            groups[groupKey] = group
            downstream.sendNext(group)
        }
        group.sendNext(transform(value))
    }

    func sendError(_ error: any Error) {
        for group in takeGroups() { group.sendError(error) }
        downstream.sendError(error)
    }

    func sendCompleted() {
        for group in takeGroups() { group.sendCompleted() }
        downstream.sendCompleted()
    }

    private func takeGroups() -> Dictionary<Key, GroupedSignal<Key, U>>.Values {
        defer { groups = [:] }
        return groups.values
    }
}
