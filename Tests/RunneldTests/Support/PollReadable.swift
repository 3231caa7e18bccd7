import Foundation
import RunnelTestSupport

/// Waits until at least one of `clients` has data (or has been closed by its peer) and pulls it
/// into their line buffers; returns the indices that were ready, empty on timeout. One thread
/// can serve thousands of connections this way.
func pollReadable(_ clients: [BlockingTCPClient], timeout: Duration) -> [Int] {
    var entries = clients.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
    let ready = poll(&entries, nfds_t(entries.count), Deadline(timeout).remainingMilliseconds)
    guard ready > 0 else { return [] }
    var indices: [Int] = []
    for (index, entry) in entries.enumerated() where entry.revents != 0 {
        clients[index].receiveAvailable()
        indices.append(index)
    }
    return indices
}
