/// What a conflating subscription holds while its connection is over the soft limit: one
/// value, or on a map one per key (its latest write or removal), in the order they began to
/// wait; a newer value takes its key's place (`Session+Conflation`).
///
/// Invariants: `slots` maps each waiting key (nil: any value without a key) to its value's
/// index in `values`, and nothing else.
///
/// Thread rules: a value, in its subscription, loop thread only. Lifetime rule: holds the
/// waiting messages until they are taken.
struct WaitingValues {
    private var values: [Message] = []
    private var slots: [ObjectIdentifier?: Int] = [:]
    /// `values.isEmpty`, kept as a byte of its own: every delivery reads it, and a byte is
    /// one load where the array's count is three.
    private(set) var isEmpty = true

    /// Keeps `message`; true when it replaced one that waited for the same key.
    mutating func keep(_ message: Message) -> Bool {
        let slot = message.label.key == nil ? nil : ObjectIdentifier(message.label)
        if let index = slots[slot] {
            values[index] = message
            return true
        }
        slots[slot] = values.count
        values.append(message)
        isEmpty = false
        return false
    }

    /// Every waiting value, oldest place first; none waits after.
    mutating func takeAll() -> [Message] {
        defer {
            values = []
            slots = [:]
            isEmpty = true
        }
        return values
    }
}
