# The R pls reference of ramanserve's cross-validation parity test
# (trainer/rpls_parity_test.go). Run by `make r-reference`:
#
#   Rscript trainer/testdata/rpls/reference.R OUTDIR
#
# It writes to OUTDIR
#   gasoline.csv, yarn.csv   the two data sets of the pls package, as
#                            %.17g text (every double round-trips)
#   reference_cv.csv         RMSEP(model, estimate = "CV") per count
#   reference_selection.csv  selectNcomp's choice per rule
#   reference_pvalues.csv    the randomization test's p-values
#   reference_test.csv       held-out RMSEP per count of the model fitted
#                            on all training rows
#   versions.txt             R and pls versions
#
# The models are fitted on the CSVs as written (read back), each spectrum
# resampled to 2048 points by linear interpolation:
#   t_k = k (p - 1) / 2047 (k = 0..2047, position in the p source points,
#   from 0), i = min(floor(t_k), p - 2), f = t_k - i,
#   x'_k = x_i + f (x_{i+1} - x_i).
# Both sets are evenly spaced, so this is linear interpolation on their
# own axis too. The Go test resamples the same way.
#
# Training rows: gasoline 1-50 (51-60 are the test rows), yarn's rows
# whose `train` is TRUE (21; the other 7 are the test rows). Each is
# cross-validated two ways with up to 20 components, mean-centred, not
# scaled (plsr's defaults, kernel PLS): 10 consecutive segments, and
# leave-one-out.

suppressPackageStartupMessages(library(pls))

args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) >= 1) args[1] else "."
dir.create(out, showWarnings = FALSE, recursive = TRUE)

num <- function(x) sprintf("%.17g", x)

write_set <- function(path, ids, label_name, labels, X, colnames_x, extra = NULL) {
  cols <- c("sample", label_name, names(extra), colnames_x)
  lines <- character(nrow(X) + 1)
  lines[1] <- paste(cols, collapse = ",")
  for (i in seq_len(nrow(X))) {
    fields <- c(ids[i], num(labels[i]))
    if (!is.null(extra)) fields <- c(fields, vapply(extra, function(e) as.character(e[i]), ""))
    lines[i + 1] <- paste(c(fields, num(X[i, ])), collapse = ",")
  }
  writeLines(lines, file.path(out, path))
}

data(gasoline, package = "pls")
data(yarn, package = "pls")
gas_nm <- sub(" nm$", "", colnames(gasoline$NIR))
write_set("gasoline.csv", seq_len(nrow(gasoline)), "octane", gasoline$octane,
          unclass(gasoline$NIR), paste0("nm", gas_nm))
write_set("yarn.csv", seq_len(nrow(yarn)), "density", yarn$density,
          unclass(yarn$NIR), paste0("x", seq_len(ncol(yarn$NIR))),
          extra = list(train = ifelse(yarn$train, "true", "false")))

resample <- function(X, m = 2048) {
  p <- ncol(X)
  t <- (0:(m - 1)) * (p - 1) / (m - 1)
  i <- pmin(floor(t), p - 2)
  f <- t - i
  lo <- X[, i + 1, drop = FALSE]
  hi <- X[, i + 2, drop = FALSE]
  lo + sweep(hi - lo, 2, f, `*`)
}

read_set <- function(path, label) {
  d <- read.csv(file.path(out, path), colClasses = "character")
  xcols <- grep("^(nm|x)[0-9]+$", names(d))
  X <- matrix(as.numeric(as.matrix(d[, xcols])), nrow(d))
  train <- if ("train" %in% names(d)) d$train == "true" else seq_len(nrow(d)) <= 50
  list(X = resample(X), y = as.numeric(d[[label]]), train = train)
}

sets <- list(gasoline = read_set("gasoline.csv", "octane"),
             yarn = read_set("yarn.csv", "density"))

max_components <- 20
permutation_seed <- 1

cv_rows <- character()
sel_rows <- character()
p_rows <- character()
test_rows <- character()

for (name in names(sets)) {
  s <- sets[[name]]
  Xtr <- s$X[s$train, , drop = FALSE]
  ytr <- s$y[s$train]
  Xte <- s$X[!s$train, , drop = FALSE]
  yte <- s$y[!s$train]
  train <- data.frame(y = ytr, X = I(Xtr))
  test <- data.frame(y = yte, X = I(Xte))

  full <- plsr(y ~ X, ncomp = max_components, data = train)
  pred <- predict(full, newdata = test)
  for (a in seq_len(dim(pred)[3])) {
    test_rows <- c(test_rows, paste(name, a, num(sqrt(mean((pred[, 1, a] - yte)^2))), sep = ","))
  }

  validations <- list(
    consecutive10 = list(validation = "CV", segments = 10, segment.type = "consecutive"),
    loo = list(validation = "LOO"))
  for (v in names(validations)) {
    model <- do.call(plsr, c(list(y ~ X, ncomp = max_components, data = train), validations[[v]]))
    # selectNcomp reads the CV results of a "CV" model; leave-one-out
    # is cross-validation with one row per segment.
    model$validation$method <- "CV"
    rmsep <- c(RMSEP(model, estimate = "CV")$val) # counts 0..ncomp
    ncomp <- length(rmsep) - 1
    for (a in seq_len(ncomp)) {
      cv_rows <- c(cv_rows, paste(name, v, a, num(rmsep[a + 1]), sep = ","))
    }
    best <- which.min(rmsep) - 1
    onesigma <- selectNcomp(model, method = "onesigma")
    set.seed(permutation_seed)
    randomization <- selectNcomp(model, method = "randomization")
    sel_rows <- c(sel_rows,
                  paste(name, v, "onesigma", onesigma, best, sep = ","),
                  paste(name, v, "randomization", randomization, best, sep = ","))

    # The p-values selectNcomp computed: the same tests with the same
    # random numbers (count 0 first, as selectNcomp orders them).
    y <- ytr
    resid <- cbind(y - (sum(y) - y) / (length(y) - 1), model$validation$pred[, 1, ] - y)
    set.seed(permutation_seed)
    for (ii in seq_len(best)) {
      pv <- pls:::randomiz.test(resid[, ii], resid[, best + 1], nperm = 999)
      p_rows <- c(p_rows, paste(name, v, ii - 1, num(pv), sep = ","))
    }
  }
}

writeLines(c("dataset,validation,components,rmsecv", cv_rows), file.path(out, "reference_cv.csv"))
writeLines(c("dataset,validation,rule,components,min_rmsecv_components", sel_rows), file.path(out, "reference_selection.csv"))
writeLines(c("dataset,validation,components,p_value", p_rows), file.path(out, "reference_pvalues.csv"))
writeLines(c("dataset,components,rmsep", test_rows), file.path(out, "reference_test.csv"))
writeLines(c(R.version.string, paste("pls", as.character(packageVersion("pls")))), file.path(out, "versions.txt"))
