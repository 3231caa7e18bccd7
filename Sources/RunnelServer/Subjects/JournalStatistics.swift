/// A durable journal's figures, for `stats` and the metrics: what `SubjectStore` reports
/// (`journalStatistics`), as a durable store's journal writer keeps them.
package struct JournalStatistics: Sendable {
    var queued = 0
    var batches: UInt64 = 0
    var lastCommitMicroseconds: UInt64 = 0
    var bytesOnDisk = 0
    var failing = false
}
