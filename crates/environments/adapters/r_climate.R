# EarthVerse adapter over R (Table 14's "R climate": summary; SPEI; GEV; trend).
# Run in the OS sandbox as: R --no-echo --vanilla --file=r_climate.R
#   --args OPERATION INPUT.csv PARAMS.csv
# INPUT.csv holds one column per input series (NA = missing); PARAMS.csv
# holds name,value rows. Prints one JSON object on stdout.
#
# The sandbox lets no process start (seccomp), so R's Sys.which(), which
# popen()s `which`, answers "not found" for every program: utils' .onLoad
# asks for `uname`, and nothing else here needs a program. R starts with
# R_DEFAULT_PACKAGES=NULL and attaches stats and utils after this.
local({
  ns <- .BaseNamespaceEnv
  unlockBinding("Sys.which", ns)
  assign("Sys.which", function(names) {
    r <- rep("", length(names))
    names(r) <- names
    r
  }, envir = ns)
  lockBinding("Sys.which", ns)
})
library(stats)
library(utils)
args <- commandArgs(trailingOnly = TRUE)
op <- args[1]
x <- read.csv(args[2])
p <- read.csv(args[3], stringsAsFactors = FALSE)
param <- function(name, default) {
  v <- p$value[p$name == name]
  if (length(v) == 0) default else v
}
num <- function(v) if (is.finite(v)) sprintf("%.17g", v) else "null"
obj <- function(...) {
  kv <- list(...)
  paste0("{", paste0("\"", names(kv), "\": ", unlist(kv), collapse = ", "), "}")
}
fail <- function(class, msg) {
  cat(obj(status = "\"error\"", failure_class = paste0("\"", class, "\""),
          message = paste0("\"", gsub("\"", "'", msg), "\"")), "\n")
  quit(status = 0)
}
s <- x$series[is.finite(x$series)]
result <- tryCatch({
  if (op == "r_climate_summary") {
    q <- quantile(s, c(0.1, 0.5, 0.9), names = FALSE, type = 7)
    obj(n = length(s), mean = num(mean(s)), sd = num(sd(s)), min = num(min(s)),
        max = num(max(s)), p10 = num(q[1]), median = num(q[2]), p90 = num(q[3]))
  } else if (op == "r_climate_trend") {
    t <- seq_along(x$series)
    ok <- is.finite(x$series)
    fit <- summary(lm(x$series[ok] ~ t[ok]))
    kt <- suppressWarnings(cor.test(t[ok], x$series[ok], method = "kendall"))
    obj(n = sum(ok), slope_per_step = num(fit$coefficients[2, 1]),
        slope_p_value = num(fit$coefficients[2, 4]),
        kendall_tau = num(unname(kt$estimate)), kendall_p_value = num(kt$p.value))
  } else if (op == "r_climate_gev") {
    suppressPackageStartupMessages(library(evd))
    block <- as.integer(param("block_length", "24"))
    rps <- as.numeric(strsplit(param("return_periods", "10"), " ")[[1]])
    nb <- length(s) %/% block
    if (nb < 10) fail("input_incompatibility", sprintf("%d complete blocks of %d values; a GEV fit needs at least 10", nb, block))
    maxima <- sapply(seq_len(nb), function(i) max(s[((i - 1) * block + 1):(i * block)]))
    fit <- fgev(maxima)
    est <- fit$estimate
    levels <- sapply(rps, function(rp) qgev(1 - 1 / rp, est["loc"], est["scale"], est["shape"]))
    obj(blocks = nb, loc = num(est["loc"]), scale = num(est["scale"]), shape = num(est["shape"]),
        return_periods = paste0("[", paste(sapply(rps, num), collapse = ", "), "]"),
        return_levels = paste0("[", paste(sapply(levels, num), collapse = ", "), "]"))
  } else if (op == "r_climate_spei") {
    # SPEI (Vicente-Serrano et al. 2010): the daily climatic water balance
    # D = P - PET, PET by Hargreaves (FAO-56 eq. 52, extraterrestrial
    # radiation eq. 21), accumulated over scale_days, standardised with a
    # three-parameter log-logistic fitted by unbiased probability-weighted
    # moments (the SPEI package's default "ub-pwm"). One fit over the
    # record: the packages hold weeks, not the years a per-month fit needs.
    lat <- as.numeric(param("latitude", NA)) * pi / 180
    k <- as.integer(param("scale_days", "1"))
    if (!is.finite(lat)) fail("argument", "latitude is required")
    if (is.null(x$time)) fail("input_incompatibility", "SPEI needs dates (time_field) for the day of year")
    J <- as.integer(format(as.Date(substr(x$time, 1, 10)), "%j"))
    dr <- 1 + 0.033 * cos(2 * pi * J / 365)
    dec <- 0.409 * sin(2 * pi * J / 365 - 1.39)
    ws <- acos(pmin(1, pmax(-1, -tan(lat) * tan(dec))))
    ra <- 24 * 60 / pi * 0.0820 * dr * (ws * sin(lat) * sin(dec) + cos(lat) * cos(dec) * sin(ws))
    tmean <- (x$tmax + x$tmin) / 2
    pet <- 0.0023 * 0.408 * ra * (tmean + 17.8) * sqrt(pmax(x$tmax - x$tmin, 0))
    d <- x$precipitation - pet
    if (k > 1) d <- as.numeric(stats::filter(d, rep(1, k), sides = 1))
    v <- sort(d[is.finite(d)])
    n <- length(v)
    if (n < 10) fail("input_incompatibility", sprintf("%d accumulated values; the log-logistic fit needs at least 10", n))
    i <- seq_len(n)
    w0 <- mean(v)
    w1 <- sum(v * (n - i) / (n - 1)) / n
    w2 <- sum(v * (n - i) * (n - i - 1) / ((n - 1) * (n - 2))) / n
    beta <- (2 * w1 - w0) / (6 * w1 - w0 - 6 * w2)
    if (!is.finite(beta) || beta <= 1) fail("input_incompatibility", sprintf("log-logistic shape %.3g <= 1: the record does not support the fit", beta))
    g <- gamma(1 + 1 / beta) * gamma(1 - 1 / beta)
    alpha <- (w0 - 2 * w1) * beta / g
    gam <- w0 - alpha * g
    spei <- qnorm(1 / (1 + (alpha / (d - gam))^beta))
    spei[!is.finite(d) | d <= gam] <- NA
    obj(n = n, alpha = num(alpha), beta = num(beta), gamma = num(gam),
        pet_total_mm = num(sum(pet, na.rm = TRUE)), spei_last = num(spei[length(spei)]),
        spei_min = num(min(spei, na.rm = TRUE)),
        spei = paste0("[", paste(sapply(spei, num), collapse = ", "), "]"))
  } else {
    fail("adapter", paste("unknown operation", op))
  }
}, error = function(e) fail("runtime", conditionMessage(e)))
cat(obj(status = "\"ok\"", library = "\"R\"", version = paste0("\"", R.version.string, "\""), result = result), "\n")
