// The hand-written declarations (../runnel.d.ts) against the ones tsc makes from runnel.js's JSDoc
// (`make check-js` writes them to .build/js-types first): what the declarations promise, the
// JavaScript does, member by member. A member added to one and not the other, or typed otherwise,
// fails to compile.
import type * as Declared from "../runnel.js";
import type * as FromJSDoc from "runnel-from-jsdoc";

type Assignable<From, To> = [From] extends [To] ? true : false;
type Same<A, B> = Assignable<A, B> extends true ? Assignable<B, A> : false;
type Members<T> = { [K in keyof T]: T[K] };

// The classes whose instances are plain data, and the options.
export const checks: true[] = [
  true as Same<Members<FromJSDoc.Value>, Members<Declared.Value>>,
  true as Same<Members<FromJSDoc.Gap>, Members<Declared.Gap>>,
  true as Same<Members<FromJSDoc.Removed>, Members<Declared.Removed>>,
  true as Same<Members<FromJSDoc.Synced>, Members<Declared.Synced>>,
  true as Same<FromJSDoc.MapEvent, Declared.MapEvent>,
  true as Same<keyof FromJSDoc.RunnelError, keyof Declared.RunnelError>,
  true as Same<FromJSDoc.RunnelError["code"], Declared.RunnelError["code"]>,
  true as Same<FromJSDoc.RunnelError["stage"], Declared.RunnelError["stage"]>,
  true as Same<ConstructorParameters<typeof FromJSDoc.RunnelError>, ConstructorParameters<typeof Declared.RunnelError>>,
  true as Same<ConstructorParameters<typeof FromJSDoc.Value>, ConstructorParameters<typeof Declared.Value>>,
  true as Same<ConstructorParameters<typeof FromJSDoc.Gap>, ConstructorParameters<typeof Declared.Gap>>,
  true as Same<ConstructorParameters<typeof FromJSDoc.Removed>, ConstructorParameters<typeof Declared.Removed>>,
  true as Same<Required<FromJSDoc.ConnectOptions>, Required<Declared.ConnectOptions>>,
  true as Same<Required<FromJSDoc.SubscribeOptions>, Required<Declared.SubscribeOptions>>,
  true as Same<FromJSDoc.Time, Declared.Time>,
  true as Same<Required<FromJSDoc.CallOptions>, Required<Declared.CallOptions>>,
  true as Same<Parameters<typeof FromJSDoc.connect>, Parameters<typeof Declared.connect>>,
  // A subscription and a client: the same public members, each of the same type (the client's
  // results are compared as declared for JavaScript: one signature where the declarations give
  // TypeScript overloads of `publish`).
  true as Same<keyof FromJSDoc.Subscription, keyof Declared.Subscription>,
  true as Same<FromJSDoc.Subscription["position"], Declared.Subscription["position"]>,
  true as Same<FromJSDoc.Subscription["ended"], Declared.Subscription["ended"]>,
  true as Same<FromJSDoc.Subscription["sid"] | FromJSDoc.Subscription["subject"], Declared.Subscription["sid"]>,
  true as Same<ReturnType<FromJSDoc.Subscription["next"]>, ReturnType<Declared.Subscription["next"]>>,
  true as Same<ReturnType<FromJSDoc.Subscription["return"]>, ReturnType<Declared.Subscription["return"]>>,
  true as Same<ReturnType<FromJSDoc.Subscription["unsubscribe"]>, ReturnType<Declared.Subscription["unsubscribe"]>>,
  true as Same<Parameters<FromJSDoc.Subscription["unsubscribe"]>, Parameters<Declared.Subscription["unsubscribe"]>>,
  // A map subscription likewise (version 1.3).
  true as Same<keyof FromJSDoc.MapSubscription, keyof Declared.MapSubscription>,
  true as Same<FromJSDoc.MapSubscription["table"], Declared.MapSubscription["table"]>,
  true as Same<FromJSDoc.MapSubscription["synced"] | FromJSDoc.MapSubscription["ended"], Declared.MapSubscription["synced"]>,
  true as Same<FromJSDoc.MapSubscription["position"], Declared.MapSubscription["position"]>,
  true as Same<ReturnType<FromJSDoc.MapSubscription["next"]>, ReturnType<Declared.MapSubscription["next"]>>,
  true as Same<ReturnType<FromJSDoc.MapSubscription["return"]>, ReturnType<Declared.MapSubscription["return"]>>,
  true as Same<Parameters<FromJSDoc.MapSubscription["waitSynced"]>, Parameters<Declared.MapSubscription["waitSynced"]>>,
  true as Same<ReturnType<FromJSDoc.MapSubscription["waitSynced"]>, ReturnType<Declared.MapSubscription["waitSynced"]>>,
  true as Same<Parameters<FromJSDoc.MapSubscription["unsubscribe"]>, Parameters<Declared.MapSubscription["unsubscribe"]>>,
  true as Same<keyof FromJSDoc.Client, keyof Declared.Client>,
  true as Same<FromJSDoc.Client["url"] | FromJSDoc.Client["connected"], Declared.Client["url"] | Declared.Client["connected"]>,
  true as Same<FromJSDoc.Client["lastDisconnect"], Declared.Client["lastDisconnect"]>,
  true as Same<Parameters<FromJSDoc.Client["publish"]>, [string, unknown?, ({ reply?: boolean, key?: string } & Declared.CallOptions)?]>,
  true as Assignable<Parameters<Declared.Client["publish"]>, Parameters<FromJSDoc.Client["publish"]>>,
  true as Same<ReturnType<FromJSDoc.Client["publish"]>, Promise<number | undefined>>,
  true as Same<Parameters<FromJSDoc.Client["deleteKey"]>, [string, string, ({ reply?: boolean } & Declared.CallOptions)?]>,
  true as Assignable<Parameters<Declared.Client["deleteKey"]>, Parameters<FromJSDoc.Client["deleteKey"]>>,
  true as Same<ReturnType<FromJSDoc.Client["deleteKey"]>, Promise<number | undefined>>,
  true as Same<Parameters<FromJSDoc.Client["request"]>, Parameters<Declared.Client["request"]>>,
  true as Same<Members<Awaited<ReturnType<FromJSDoc.Client["request"]>>>, Members<Awaited<ReturnType<Declared.Client["request"]>>>>,
  true as Same<Parameters<FromJSDoc.Client["subscribe"]>, Parameters<Declared.Client["subscribe"]>>,
  true as Same<Parameters<FromJSDoc.Client["subscribeMap"]>, Parameters<Declared.Client["subscribeMap"]>>,
  true as Same<Parameters<FromJSDoc.Client["authenticate"]>, Parameters<Declared.Client["authenticate"]>>,
  true as Same<Parameters<FromJSDoc.Client["whileWatched"]>, Parameters<Declared.Client["whileWatched"]>>,
  true as Same<ReturnType<FromJSDoc.Client["close"]>, ReturnType<Declared.Client["close"]>>,
];
