import Glibc

/// A counting semaphore (`sem_t`), on which the reader thread blocks while a subscription's
/// buffer is full under `ClientOptions.Overflow.wait`: a thread that blocks, which no task must.
///
/// Thread rules: `wait` and `signal` from any thread. Lifetime rule: the `sem_t` lives in memory
/// allocated once and never moved, freed on deinit, when no thread waits on it.
final class Semaphore: @unchecked Sendable {
    private let semaphore: UnsafeMutablePointer<sem_t>

    init() {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    func wait() {
        while sem_wait(semaphore) != 0 && errno == EINTR {}
    }

    func signal() { sem_post(semaphore) }
}
