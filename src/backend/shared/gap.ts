// What a backend (nsjail, landlock) or an export target (docker, oci, k8s) does differently from bwrap:
// one shape and one vocabulary for their gap tables, `sbx explain` and `sbx export`. Pure data.

export interface Gap {
  /** The Policy field (`limits.cpuTimeSec`, `mounts.dev`) or the target's own behaviour (`nsjail.*`, `docker.*`). */
  key: string;
  /**
   * refused: a policy that needs it is refused (BACKEND_UNSUPPORTED), never run without it.
   * weaker: enforced less, or differently, than bwrap does; `sbx explain` names it, and a run's report
   * lists a backend's weaker points (its approximations).
   * equivalent: expressed differently, nothing lost.
   * omitted: a convenience of this host's that an export target cannot carry (the exporting user's
   * toolchains in HOME): the target gets less access, never less isolation.
   */
  effect: 'refused' | 'weaker' | 'equivalent' | 'omitted';
  detail: string;
}
