import Runnel

/// Runs `body` with `TestScheduler` current, so subscriptions are synchronous.
@discardableResult
func onTestScheduler<T>(_ scheduler: TestScheduler, _ body: () throws -> T) rethrows -> T {
    try scheduler.performAsCurrent(body)
}

/// Runs `body` with the immediate scheduler current, so subscriptions are synchronous.
@discardableResult
func inline<T>(_ body: () throws -> T) rethrows -> T {
    try ImmediateScheduler.shared.performAsCurrent(body)
}
