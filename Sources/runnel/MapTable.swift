/// `runnel map`'s copy of one map subject: each key's value as last printed, and how what the
/// server sends becomes lines (`MapLine`).
///
/// A subscription that did not resume starts with a snapshot, which is gathered until its
/// `synced`; then every key whose value differs from the one printed before is printed, in key
/// order: the whole table the first time, and after a new connection that could not resume
/// only what changed while runnel was away (a key gone meanwhile shows as
/// `(removed: missed)`, since how it went is not known). Every other write or removal (those
/// after `synced`, and those a resumed subscription sends before it) is printed as it comes.
///
/// Thread rules: one thread (the `SubscriptionPrinter`'s). Lifetime rule: one for the whole
/// command, across connections, so that a new snapshot is compared with what was printed.
final class MapTable {
    private let output: FileDescriptorWriter
    /// Whether `synced` ends the command (`runnel map --once`).
    private let endsAtSync: Bool
    /// Each key's value, as its exact JSON bytes, as printed last.
    private var values: [String: [UInt8]] = [:]
    /// The snapshot being gathered, from a subscription that did not resume until its `synced`.
    private var snapshot: [String: [UInt8]]?

    init(output: FileDescriptorWriter, endsAtSync: Bool) {
        self.output = output
        self.endsAtSync = endsAtSync
    }

    /// A new subscription: it sends the changes after the last position printed (`resumed`),
    /// else a snapshot of every key.
    func subscribed(resumed: Bool) { snapshot = resumed ? nil : [:] }

    /// A `next` event: `key` now has `value`.
    func write(key: String, value: UnsafeRawBufferPointer) {
        guard snapshot == nil else {
            snapshot?[key] = Array(value)
            return
        }
        values[key] = Array(value)
        output.append(MapLine.keyField(key))
        output.append(value)
        output.append(byte: 0x0A)
    }

    /// A `removed` event: `key` went, for `reason`.
    func remove(key: String, reason: String?) {
        guard snapshot == nil else {
            snapshot?.removeValue(forKey: key)
            return
        }
        guard values.removeValue(forKey: key) != nil else { return }
        output.append(MapLine.keyField(key) + MapLine.removal(reason: reason) + "\n")
    }

    /// The subscription's `synced`: prints what a gathered snapshot changed. Returns whether
    /// the command ends here (`--once`).
    func synced() -> Bool {
        if let snapshot {
            for key in Set(values.keys).union(snapshot.keys).sorted() {
                if let value = snapshot[key] {
                    guard values[key] != value else { continue }
                    output.append(MapLine.keyField(key))
                    value.withUnsafeBytes { output.append($0) }
                    output.append(byte: 0x0A)
                } else {
                    output.append(MapLine.keyField(key) + MapLine.removal(reason: "missed") + "\n")
                }
            }
            values = snapshot
            self.snapshot = nil
        }
        return endsAtSync
    }
}
