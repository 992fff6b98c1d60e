//! The SORTIE-ND parameter files of the reader's tests (our own small files in its format).

/// Two species; GapDisperse (Weibull canopy, lognormal gap) for Fir, NonGapDisperse
/// (lognormal) and NonSpatialDisperse for Aspen, a negative binomial seed distribution,
/// Establishment for Fir only, StochasticMortality, ConstRadialGrowth, a tree map with a
/// snag, and one behaviour geofield does not model (Substrate).
pub(super) const MAIN: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="no" ?>
<paramFile fileCode="07010101">
<plot>
<timesteps>6</timesteps>
<yearsPerTimestep>2</yearsPerTimestep>
<randomSeed>-42</randomSeed>
<plot_lenX>120.0</plot_lenX>
<plot_lenY>80.0</plot_lenY>
<plot_latitude>54.8</plot_latitude>
</plot>
<trees>
<tr_speciesList>
<tr_species speciesName="Fir"/>
<tr_species speciesName="Aspen"/>
</tr_speciesList>
<tr_seedDiam10Cm>0.1</tr_seedDiam10Cm>
<tr_minAdultDBH>
<tr_madVal species="Fir">12.5</tr_madVal>
<tr_madVal species="Aspen">8</tr_madVal>
</tr_minAdultDBH>
<tr_maxSeedlingHeight>
<tr_mshVal species="Fir">1.35</tr_mshVal>
<tr_mshVal species="Aspen">1.35</tr_mshVal>
</tr_maxSeedlingHeight>
<tr_treemap>
<tm_treeSettings sp="Fir" tp="3">
<tm_floatCodes><tm_floatCode label="X">0</tm_floatCode><tm_floatCode label="Y">1</tm_floatCode><tm_floatCode label="DBH">2</tm_floatCode></tm_floatCodes>
</tm_treeSettings>
<tm_treeSettings sp="Fir" tp="5">
<tm_floatCodes><tm_floatCode label="X">0</tm_floatCode><tm_floatCode label="Y">1</tm_floatCode><tm_floatCode label="DBH">2</tm_floatCode></tm_floatCodes>
</tm_treeSettings>
<tm_treeSettings sp="Aspen" tp="2">
<tm_floatCodes><tm_floatCode label="X">0</tm_floatCode><tm_floatCode label="Y">1</tm_floatCode><tm_floatCode label="DBH">2</tm_floatCode><tm_floatCode label="Height">3</tm_floatCode></tm_floatCodes>
</tm_treeSettings>
<tm_treeSettings sp="Aspen" tp="1">
<tm_floatCodes><tm_floatCode label="X">0</tm_floatCode><tm_floatCode label="Y">1</tm_floatCode><tm_floatCode label="Diam10">2</tm_floatCode></tm_floatCodes>
</tm_treeSettings>
<tree sp="0" tp="3"><fl c="0">10.5</fl><fl c="1">20.25</fl><fl c="2">31.5</fl></tree>
<tree sp="0" tp="3"><fl c="0">100</fl><fl c="1">70</fl><fl c="2">45</fl></tree>
<tree sp="1" tp="2"><fl c="0">55</fl><fl c="1">5.5</fl><fl c="2">4.2</fl><fl c="3">5.1</fl></tree>
<tree sp="1" tp="1"><fl c="0">60</fl><fl c="1">40</fl><fl c="2">0.6</fl></tree>
<tree sp="0" tp="5"><fl c="0">1</fl><fl c="1">2</fl><fl c="2">20</fl></tree>
</tr_treemap>
</trees>
<grid gridName="Dispersed Seeds">
<ma_lengthXCells>10</ma_lengthXCells>
<ma_lengthYCells>10</ma_lengthYCells>
</grid>
<behaviorList>
<behavior><behaviorName>GapDisperse</behaviorName><version>1</version><listPosition>1</listPosition>
<applyTo species="Fir" type="Adult"/></behavior>
<behavior><behaviorName>NonGapDisperse</behaviorName><version>1</version><listPosition>2</listPosition>
<applyTo species="Aspen" type="Adult"/></behavior>
<behavior><behaviorName>NonSpatialDisperse</behaviorName><version>1</version><listPosition>3</listPosition>
<applyTo species="Aspen" type="Adult"/></behavior>
<behavior><behaviorName>Establishment</behaviorName><version>1</version><listPosition>4</listPosition>
<applyTo species="Fir" type="Seed"/></behavior>
<behavior><behaviorName>StochasticMortality</behaviorName><version>1</version><listPosition>5</listPosition>
<applyTo species="Fir" type="Seedling"/><applyTo species="Fir" type="Adult"/><applyTo species="Fir" type="Snag"/></behavior>
<behavior><behaviorName>ConstRadialGrowth</behaviorName><version>1</version><listPosition>6</listPosition>
<applyTo species="Aspen" type="Sapling"/></behavior>
<behavior><behaviorName>Substrate</behaviorName><version>2.1</version><listPosition>7</listPosition>
<applyTo species="Fir" type="Seedling"/></behavior>
</behaviorList>
<GeneralDisperse>
<di_seedDistributionMethod>4</di_seedDistributionMethod>
<di_clumpingParameter>
<di_cpVal species="Fir">0.8</di_cpVal>
<di_cpVal species="Aspen">2.5</di_cpVal>
</di_clumpingParameter>
</GeneralDisperse>
<GapDisperse1>
<di_minDbhForReproduction><di_mdfrVal species="Fir">15</di_mdfrVal></di_minDbhForReproduction>
<di_canopyFunction><di_cfVal species="Fir">0</di_cfVal></di_canopyFunction>
<di_weibullCanopySTR><di_wcsVal species="Fir">50.5</di_wcsVal></di_weibullCanopySTR>
<di_weibullCanopyBeta><di_wcbVal species="Fir">2</di_wcbVal></di_weibullCanopyBeta>
<di_weibullCanopyDispersal><di_wcdVal species="Fir">1.2E-4</di_wcdVal></di_weibullCanopyDispersal>
<di_weibullCanopyTheta><di_wctVal species="Fir">3</di_wctVal></di_weibullCanopyTheta>
<di_gapFunction><di_gfVal species="Fir">1</di_gfVal></di_gapFunction>
<di_lognormalGapSTR><di_lgsVal species="Fir">30</di_lgsVal></di_lognormalGapSTR>
<di_lognormalGapBeta><di_lgbVal species="Fir">1.5</di_lgbVal></di_lognormalGapBeta>
<di_lognormalGapX0><di_lgx0Val species="Fir">8</di_lgx0Val></di_lognormalGapX0>
<di_lognormalGapXb><di_lgxbVal species="Fir">0.5</di_lgxbVal></di_lognormalGapXb>
<di_maxGapDensity>2</di_maxGapDensity>
</GapDisperse1>
<NonGapDisperse2>
<di_minDbhForReproduction><di_mdfrVal species="Aspen">10</di_mdfrVal></di_minDbhForReproduction>
<di_canopyFunction><di_cfVal species="Aspen">1</di_cfVal></di_canopyFunction>
<di_lognormalCanopySTR><di_lcsVal species="Aspen">80</di_lcsVal></di_lognormalCanopySTR>
<di_lognormalCanopyBeta><di_lcbVal species="Aspen">2.1</di_lcbVal></di_lognormalCanopyBeta>
<di_lognormalCanopyX0><di_lcx0Val species="Aspen">12</di_lcx0Val></di_lognormalCanopyX0>
<di_lognormalCanopyXb><di_lcxbVal species="Aspen">0.6</di_lcxbVal></di_lognormalCanopyXb>
</NonGapDisperse2>
<NonSpatialDisperse3>
<di_minDbhForReproduction><di_mdfrVal species="Aspen">10</di_mdfrVal></di_minDbhForReproduction>
<di_nonSpatialSlopeOfLambda><di_nssolVal species="Aspen">0.02</di_nssolVal></di_nonSpatialSlopeOfLambda>
<di_nonSpatialInterceptOfLambda><di_nsiolVal species="Aspen">0.3</di_nsiolVal></di_nonSpatialInterceptOfLambda>
</NonSpatialDisperse3>
<StochasticMortality5>
<mo_stochasticMortRate><mo_smrVal species="Fir">0.15</mo_smrVal></mo_stochasticMortRate>
</StochasticMortality5>
<ConstRadialGrowth6>
<gr_adultConstRadialInc><gr_acriVal species="Aspen">1.5</gr_acriVal></gr_adultConstRadialInc>
</ConstRadialGrowth6>
</paramFile>
"#;

/// Two species under MastingSpatialDisperse: Pine deterministic STR drawn per species,
/// Spruce lognormal STR drawn per tree; normal seed distribution; no tree map.
pub(super) const MASTING: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<paramFile>
<plot><timesteps>3</timesteps><yearsPerTimestep>1</yearsPerTimestep><randomSeed>0</randomSeed>
<plot_lenX>50</plot_lenX><plot_lenY>60</plot_lenY></plot>
<trees>
<tr_speciesList><tr_species speciesName="Pine"/><tr_species speciesName="Spruce"/></tr_speciesList>
<tr_minAdultDBH><tr_madVal species="Pine">10</tr_madVal><tr_madVal species="Spruce">9</tr_madVal></tr_minAdultDBH>
</trees>
<behaviorList>
<behavior><behaviorName>MastingSpatialDisperse</behaviorName><version>1</version><listPosition>1</listPosition>
<applyTo species="Pine" type="Adult"/><applyTo species="Spruce" type="Adult"/><applyTo species="Spruce" type="Sapling"/></behavior>
</behaviorList>
<GeneralDisperse>
<di_seedDistributionMethod>3</di_seedDistributionMethod>
<di_standardDeviation><di_sdVal species="Pine">2</di_sdVal><di_sdVal species="Spruce">1.5</di_sdVal></di_standardDeviation>
</GeneralDisperse>
<MastingSpatialDisperse1>
<di_minDbhForReproduction><di_mdfrVal species="Pine">12</di_mdfrVal><di_mdfrVal species="Spruce">11</di_mdfrVal></di_minDbhForReproduction>
<di_mastCDFA><di_mcdfaVal species="Pine">4</di_mcdfaVal><di_mcdfaVal species="Spruce">6</di_mcdfaVal></di_mastCDFA>
<di_mastCDFB><di_mcdfbVal species="Pine">-3</di_mcdfbVal><di_mcdfbVal species="Spruce">-2.5</di_mcdfbVal></di_mastCDFB>
<di_mastSTRPDF><di_mstrpdfVal species="Pine">0</di_mstrpdfVal><di_mstrpdfVal species="Spruce">2</di_mstrpdfVal></di_mastSTRPDF>
<di_spatialSTR><di_sstrVal species="Pine">20</di_sstrVal><di_sstrVal species="Spruce">3</di_sstrVal></di_spatialSTR>
<di_spatialSTRStdDev><di_sstrsdVal species="Pine">0</di_sstrsdVal><di_sstrsdVal species="Spruce">0.5</di_sstrsdVal></di_spatialSTRStdDev>
<di_mastingSTR><di_mstrVal species="Pine">400</di_mstrVal><di_mstrVal species="Spruce">5</di_mstrVal></di_mastingSTR>
<di_mastingSTRStdDev><di_mstrsdVal species="Pine">0</di_mstrsdVal><di_mstrsdVal species="Spruce">0.4</di_mstrsdVal></di_mastingSTRStdDev>
<di_spatialBeta><di_sbVal species="Pine">2</di_sbVal><di_sbVal species="Spruce">1.8</di_sbVal></di_spatialBeta>
<di_mastingBeta><di_mbVal species="Pine">2.5</di_mbVal><di_mbVal species="Spruce">2.2</di_mbVal></di_mastingBeta>
<di_canopyFunction><di_cfVal species="Pine">0</di_cfVal><di_cfVal species="Spruce">1</di_cfVal></di_canopyFunction>
<di_weibullCanopyDispersal><di_wcdVal species="Pine">1e-4</di_wcdVal></di_weibullCanopyDispersal>
<di_weibullCanopyTheta><di_wctVal species="Pine">3</di_wctVal></di_weibullCanopyTheta>
<di_weibullMastingDispersal><di_wmdVal species="Pine">1e-4</di_wmdVal></di_weibullMastingDispersal>
<di_weibullMastingTheta><di_wmtVal species="Pine">3</di_wmtVal></di_weibullMastingTheta>
<di_lognormalCanopyX0><di_lcx0Val species="Spruce">10</di_lcx0Val></di_lognormalCanopyX0>
<di_lognormalCanopyXb><di_lcxbVal species="Spruce">0.7</di_lcxbVal></di_lognormalCanopyXb>
<di_lognormalMastingX0><di_lmx0Val species="Spruce">10</di_lmx0Val></di_lognormalMastingX0>
<di_lognormalMastingXb><di_lmxbVal species="Spruce">0.7</di_lmxbVal></di_lognormalMastingXb>
<di_mastGroup><di_mgVal species="Pine">7</di_mgVal><di_mgVal species="Spruce">3</di_mgVal></di_mastGroup>
<di_mastDrawPerSpecies><di_mdpsVal species="Pine">1</di_mdpsVal><di_mdpsVal species="Spruce">0</di_mdpsVal></di_mastDrawPerSpecies>
<di_spatialPropParticipating><di_sppVal species="Pine">0.6</di_sppVal><di_sppVal species="Spruce">1</di_sppVal></di_spatialPropParticipating>
<di_mastPropParticipating><di_mppVal species="Pine">1</di_mppVal><di_mppVal species="Spruce">0.9</di_mppVal></di_mastPropParticipating>
</MastingSpatialDisperse1>
</paramFile>
"#;
