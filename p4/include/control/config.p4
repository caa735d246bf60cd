// Run-time telemetry configuration. BMv2 cannot write registers over
// P4Runtime, so configuration lives in the default action of a keyless table:
// the controller changes mode, epoch and timeouts by one table write.
#ifndef __CONFIG__
#define __CONFIG__

control TelemetryConfig(inout local_metadata_t meta) {
    action set_config(mode_t mode, epoch_t epoch, bit<48> ts_scale,
                      ts_t io_timeout_ns, ts_t flow_timeout_ns) {
        meta.cfg.mode = mode;
        meta.cfg.epoch = epoch;
        meta.cfg.ts_scale = ts_scale;
        meta.cfg.io_timeout_ns = io_timeout_ns;
        meta.cfg.flow_timeout_ns = flow_timeout_ns;
#ifdef TARGET_TNA
        meta.cfg.io_timeout_c = io_timeout_ns[47:16];
        meta.cfg.flow_timeout_c = flow_timeout_ns[47:16];
#endif
    }

    // Until the controller configures it, the switch forwards and measures nothing.
    table telemetry_config {
        key = {}
        actions = {
            set_config;
        }
        default_action = set_config(MODE_OFF, 0, 1, 1000000000, 1000000000);
        size = 1;
    }

    apply {
        telemetry_config.apply();
    }
}

#endif
