/// The disposable of one subscription to a subject: disposing it takes the subscriber's
/// entry out of the subject's roster, so the subject sends it nothing more and lets it go.
///
/// It holds the roster, not the subject (see `SubjectRoster`), and knows its entry by
/// identity only: the roster's list is what keeps the entry alive. Thread-safe: `entry` is
/// guarded by the roster's lock. The subscriber may be handed this disposable (and dispose
/// it) before the entry is listed; the subject lists the entry, under the lock, only if it
/// is not disposed by then, and a dispose after that finds the entry and takes it out.
final class SubjectSubscription: CompoundDisposable, @unchecked Sendable {
    private let roster: SubjectRoster
    /// Guarded by the roster's lock: the entry's identity, set when it is listed.
    var entry: ObjectIdentifier?

    init(roster: SubjectRoster) {
        self.roster = roster
        super.init()
    }

    /// Stops delivery before the subscription's other disposables run.
    override func willDispose() {
        roster.remove(self)
    }
}
