extension Signal {
    /// For each key `keys` sends, switches to the signal of `cases` for that key, or to
    /// `default` when there is none (ReactiveCocoa's `switch:cases:default:`).
    ///
    /// Behaves as `switchToLatest`: completes when `keys` and the current case have completed.
    /// A key with no case and no default fails with `RunnelError.noCase`. Any error is sent
    /// on and disposes everything; disposing the result disposes `keys` and the current case.
    public static func `switch`<K: Hashable & Sendable>(
        _ keys: Signal<K>, cases: [K: Signal<Value>], default defaultSignal: Signal<Value>? = nil
    ) -> Signal<Value> {
        keys.wrapped { key -> Signal<Value> in
            cases[key] ?? defaultSignal ?? Signal.error(RunnelError.noCase("\(key)"))
        }
        .switchToLatest()
        .named("+switch: \(keys) cases: \(cases) default: \(String(describing: defaultSignal))")
    }
}
